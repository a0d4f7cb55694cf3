// SPDX-License-Identifier: GPL-2.0
/*
 * Placement: on which NUMA node a volatile instance's data pages are
 * allocated.  An instance has a policy (the mpol= mount option, tmpfs's
 * syntax; remount changes it) and a file may have its own
 * (MORSEL_IOC_SET_MPOL), which wins; with neither, the allocating task's
 * own policy decides (set_mempolicy(2), numactl), as for tmpfs's
 * mpol=default.  The RAM source (source.c) asks here for every data page
 * and 2 MiB block; tables and the 1 GiB reserve (pool.c) are not placed.
 * A persistent instance's pages are its device's: it takes no policy.
 *
 * Locking: a policy is immutable once published.  Readers (every
 * allocation, which may sleep in the page allocator) hold morsel_mpol_srcu
 * from reading the pointer to the last use of the policy; a writer
 * replaces the pointer (the instance's under s_umount at mount and
 * remount, a file's under its inode lock) and frees the old policy after
 * an SRCU grace period.  The interleave cursor is an atomic of the
 * policy: concurrent allocations each take the next node.
 */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/srcu.h>
#include <linux/string.h>

#include "morsel.h"

/**
 * struct morsel_policy - one placement policy (immutable once published)
 * @mode:   MORSEL_MPOL_DEFAULT .. MORSEL_MPOL_LOCAL.
 * @flags:  tmpfs's "=static" or "=relative" as written (MPOL_F_*): shown
 *          again, no effect (morsel pages are not remapped when a cpuset
 *          changes).
 * @nodes:  the nodes of PREFERRED (one), BIND and INTERLEAVE.
 * @next:   INTERLEAVE: the count of pages placed so far.
 * @gfp:    flags added to every allocation (a migration's target: that
 *          node only, and no reclaim beyond a light attempt).
 * @rcu:    for the free after a grace period.
 */
struct morsel_policy {
	unsigned int mode;
	unsigned int flags;
	gfp_t gfp;
	nodemask_t nodes;
	atomic_t next;
	struct rcu_head rcu;
};

#define POL_STATIC	1
#define POL_RELATIVE	2

DEFINE_STATIC_SRCU(morsel_mpol_srcu);

static const char *const mode_names[] = {
	[MORSEL_MPOL_DEFAULT] = "default",
	[MORSEL_MPOL_PREFERRED] = "prefer",
	[MORSEL_MPOL_BIND] = "bind",
	[MORSEL_MPOL_INTERLEAVE] = "interleave",
	[MORSEL_MPOL_LOCAL] = "local",
};

static struct morsel_policy *policy_new(unsigned int mode, unsigned int flags,
					const nodemask_t *nodes)
{
	struct morsel_policy *p = kzalloc(sizeof(*p), GFP_KERNEL);

	if (!p)
		return ERR_PTR(-ENOMEM);
	p->mode = mode;
	p->flags = flags;
	p->nodes = *nodes;
	return p;
}

/*
 * The nodes a mode may have, checked as tmpfs's mpol_parse_str does: one
 * node for PREFERRED, some for BIND, none for DEFAULT and LOCAL; every
 * node must have memory.  INTERLEAVE without nodes takes all that do.
 */
static int check_nodes(unsigned int mode, nodemask_t *nodes)
{
	switch (mode) {
	case MORSEL_MPOL_DEFAULT:
	case MORSEL_MPOL_LOCAL:
		return nodes_empty(*nodes) ? 0 : -EINVAL;
	case MORSEL_MPOL_PREFERRED:
		if (nodes_weight(*nodes) != 1)
			return -EINVAL;
		break;
	case MORSEL_MPOL_BIND:
		if (nodes_empty(*nodes))
			return -EINVAL;
		break;
	case MORSEL_MPOL_INTERLEAVE:
		if (nodes_empty(*nodes))
			*nodes = node_states[N_MEMORY];
		break;
	default:
		return -EINVAL;
	}
	return nodes_subset(*nodes, node_states[N_MEMORY]) ? 0 : -EINVAL;
}

/**
 * morsel_mpol_parse - a policy from tmpfs's mpol= syntax
 * @str: MODE[=static|=relative][:NODELIST] with MODE default, prefer,
 *       bind, interleave or local (prefer without a node is local).
 *
 * Return: the policy, NULL for "default" (the task's own), or
 * ERR_PTR(-EINVAL / -ENOMEM).
 */
struct morsel_policy *morsel_mpol_parse(const char *str)
{
	char *buf, *list, *flag;
	unsigned int mode, flags = 0;
	nodemask_t nodes;
	int err = -EINVAL;

	buf = kstrdup(str, GFP_KERNEL);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	nodes_clear(nodes);
	list = strchr(buf, ':');
	if (list) {
		*list++ = '\0';
		if (!*list || nodelist_parse(list, nodes))
			goto out;
	}
	flag = strchr(buf, '=');
	if (flag) {
		*flag++ = '\0';
		if (!strcmp(flag, "static"))
			flags = POL_STATIC;
		else if (!strcmp(flag, "relative"))
			flags = POL_RELATIVE;
		else
			goto out;
	}
	for (mode = MORSEL_MPOL_DEFAULT; mode <= MORSEL_MPOL_LOCAL; mode++)
		if (!strcmp(buf, mode_names[mode]))
			break;
	if (mode > MORSEL_MPOL_LOCAL)
		goto out;
	if (mode == MORSEL_MPOL_PREFERRED) {
		/* One node number, not a list; none means local. */
		if (!list)
			mode = MORSEL_MPOL_LOCAL;
		else if (strspn(list, "0123456789") != strlen(list))
			goto out;
	}
	/* Flags go with nodes (tmpfs: "default" and "local" take none). */
	if (flags && (mode == MORSEL_MPOL_DEFAULT || mode == MORSEL_MPOL_LOCAL))
		goto out;
	err = check_nodes(mode, &nodes);
	if (err)
		goto out;
	kfree(buf);
	if (mode == MORSEL_MPOL_DEFAULT)
		return NULL;
	return policy_new(mode, flags, &nodes);
out:
	kfree(buf);
	return ERR_PTR(err);
}

/**
 * morsel_mpol_from_user - a file's policy from MORSEL_IOC_SET_MPOL
 *
 * Return: the policy, NULL for INHERIT (the instance's), or
 * ERR_PTR(-EINVAL / -ENOMEM).
 */
struct morsel_policy *morsel_mpol_from_user(const struct morsel_mpol *u)
{
	nodemask_t nodes;
	unsigned int n;
	int err;

	if (u->mode == MORSEL_MPOL_INHERIT)
		return u->nodes ? ERR_PTR(-EINVAL) : NULL;
	if (u->mode > MORSEL_MPOL_LOCAL)
		return ERR_PTR(-EINVAL);
	nodes_clear(nodes);
	for (n = 0; n < MORSEL_MAX_NODES; n++) {
		if (!(u->nodes & BIT_ULL(n)))
			continue;
		if (n >= MAX_NUMNODES)
			return ERR_PTR(-EINVAL);
		node_set(n, nodes);
	}
	err = check_nodes(u->mode, &nodes);
	if (err)
		return ERR_PTR(err);
	return policy_new(u->mode, 0, &nodes);
}

/**
 * morsel_mpol_target - a policy that allocates on node @nid or fails
 *
 * For migration (tree.c morsel_migrate): never another node, and no OOM
 * kill for want of memory there (the page stays where it is).  Never
 * published; the caller frees it with kfree.
 */
struct morsel_policy *morsel_mpol_target(int nid)
{
	struct morsel_policy *p;
	nodemask_t nodes;

	nodes_clear(nodes);
	node_set(nid, nodes);
	p = policy_new(MORSEL_MPOL_PREFERRED, 0, &nodes);
	if (!IS_ERR(p))
		p->gfp = __GFP_THISNODE | __GFP_NORETRY | __GFP_NOWARN;
	return p;
}

/* A file's own policy for MORSEL_IOC_GET_MPOL (INHERIT when none). */
void morsel_mpol_to_user(struct morsel_policy __rcu **pp, struct morsel_mpol *u)
{
	const struct morsel_policy *p;
	unsigned int n;
	int idx;

	memset(u, 0, sizeof(*u));
	idx = srcu_read_lock(&morsel_mpol_srcu);
	p = srcu_dereference(*pp, &morsel_mpol_srcu);
	if (p) {
		u->mode = p->mode;
		for_each_node_mask(n, p->nodes)
			if (n < MORSEL_MAX_NODES)
				u->nodes |= BIT_ULL(n);
	}
	srcu_read_unlock(&morsel_mpol_srcu, idx);
}

/* ",mpol=..." for /proc/mounts, as tmpfs writes it; nothing for default. */
void morsel_mpol_show(struct seq_file *seq, struct morsel_policy __rcu **pp)
{
	const struct morsel_policy *p;
	int idx;

	idx = srcu_read_lock(&morsel_mpol_srcu);
	p = srcu_dereference(*pp, &morsel_mpol_srcu);
	if (p) {
		seq_printf(seq, ",mpol=%s", mode_names[p->mode]);
		if (p->flags)
			seq_puts(seq, p->flags == POL_STATIC ? "=static" :
				 "=relative");
		if (p->mode != MORSEL_MPOL_LOCAL)
			seq_printf(seq, ":%*pbl", nodemask_pr_args(&p->nodes));
	}
	srcu_read_unlock(&morsel_mpol_srcu, idx);
}

static void policy_free_rcu(struct rcu_head *head)
{
	kfree(container_of(head, struct morsel_policy, rcu));
}

/**
 * morsel_mpol_set - publish @p (NULL: none) in *@pp
 *
 * The caller serialises writers of *@pp (top of file); allocations that
 * still use the old policy finish before it is freed.
 */
void morsel_mpol_set(struct morsel_policy __rcu **pp, struct morsel_policy *p)
{
	struct morsel_policy *old = rcu_replace_pointer(*pp, p, true);

	if (old)
		call_srcu(&morsel_mpol_srcu, &old->rcu, policy_free_rcu);
}

/* The policy of a file or instance nobody allocates for any more. */
void morsel_mpol_free(struct morsel_policy __rcu **pp)
{
	kfree(rcu_dereference_protected(*pp, true));
	RCU_INIT_POINTER(*pp, NULL);
}

/* Module exit: every policy freed after a grace period is gone. */
void morsel_mpol_exit(void)
{
	srcu_barrier(&morsel_mpol_srcu);
}

/* The policy in force for @pl (its own, else the instance's), or NULL. */
static const struct morsel_policy *policy_of(const struct morsel_ram *r,
					     const struct morsel_place *pl)
{
	const struct morsel_policy *p = NULL;

	if (pl)
		p = srcu_dereference(pl->own, &morsel_mpol_srcu);
	return p ?: srcu_dereference(r->mpol, &morsel_mpol_srcu);
}

/* INTERLEAVE's next node: the count of pages placed, over its nodes. */
static int interleave_node(struct morsel_policy *p)
{
	unsigned int nth = (unsigned int)atomic_inc_return(&p->next) %
			   nodes_weight(p->nodes);
	int nid = first_node(p->nodes);

	while (nth--)
		nid = next_node(nid, p->nodes);
	return nid;
}

/* A block of 2^@order pages for @p (NULL: the task's own policy). */
static struct page *policy_alloc(struct morsel_policy *p, gfp_t gfp,
				 unsigned int order)
{
	if (p)
		gfp |= p->gfp;
	switch (p ? p->mode : MORSEL_MPOL_DEFAULT) {
	case MORSEL_MPOL_PREFERRED:
		return alloc_pages_node(first_node(p->nodes), gfp, order);
	case MORSEL_MPOL_BIND:
		/* Nearest allowed node first, as MPOL_BIND's zonelist is. */
		return __alloc_pages(gfp, order, numa_node_id(), &p->nodes);
	case MORSEL_MPOL_INTERLEAVE:
		return alloc_pages_node(interleave_node(p), gfp, order);
	case MORSEL_MPOL_LOCAL:
		return alloc_pages_node(numa_node_id(), gfp, order);
	default:
		return alloc_pages(gfp, order);
	}
}

/**
 * morsel_mpol_alloc - a block of 2^@order pages where @pl's policy says
 * @r:  the RAM source's context (the instance's policy).
 * @pl: the file's placement, or NULL for the instance's alone.
 */
struct page *morsel_mpol_alloc(const struct morsel_ram *r,
			       const struct morsel_place *pl, gfp_t gfp,
			       unsigned int order)
{
	struct page *page;
	int idx;

	idx = srcu_read_lock(&morsel_mpol_srcu);
	page = policy_alloc((struct morsel_policy *)policy_of(r, pl), gfp,
			    order);
	srcu_read_unlock(&morsel_mpol_srcu, idx);
	return page;
}

/**
 * morsel_mpol_alloc_bulk - up to @nr pages into the empty @pages
 *
 * One bulk call where the policy names one node or one set of them; none
 * for INTERLEAVE (and the task's own policy, which the bulk allocator
 * does not follow): the caller tops up page by page with
 * morsel_mpol_alloc.  Return: how many.
 */
unsigned int morsel_mpol_alloc_bulk(const struct morsel_ram *r,
				    const struct morsel_place *pl, gfp_t gfp,
				    unsigned int nr, struct page **pages)
{
	const struct morsel_policy *p;
	unsigned int got = 0;
	int idx;

	idx = srcu_read_lock(&morsel_mpol_srcu);
	p = policy_of(r, pl);
	switch (p && p->gfp ? MORSEL_MPOL_INHERIT :	/* page by page */
		p ? p->mode : MORSEL_MPOL_DEFAULT) {
	case MORSEL_MPOL_PREFERRED:
		got = alloc_pages_bulk_array_node(gfp, first_node(p->nodes),
						  nr, pages);
		break;
	case MORSEL_MPOL_BIND:
		got = __alloc_pages_bulk(gfp, numa_node_id(),
					 (nodemask_t *)&p->nodes, nr, NULL,
					 pages);
		break;
	case MORSEL_MPOL_LOCAL:
		got = alloc_pages_bulk_array_node(gfp, numa_node_id(), nr,
						  pages);
		break;
	case MORSEL_MPOL_DEFAULT:
		/* No policy of the task to follow: its node, as before. */
		if (!current->mempolicy)
			got = alloc_pages_bulk_array(gfp, nr, pages);
		break;
	}
	srcu_read_unlock(&morsel_mpol_srcu, idx);
	return got;
}
