// SPDX-License-Identifier: GPL-2.0
/*
 * morsel_probe: a test-only module (never loaded outside the suite).  It
 * gives tests a view of kernel state that user space cannot see (probe.h):
 * raw entries of the caller's page tables, follow_pfnmap_start() -- the
 * walker KVM falls back to for VM_PFNMAP memory -- and a counting mmu
 * notifier standing in for a secondary MMU.
 *
 * Locking: the walks run under the caller's mmap_lock (read); the
 * notifier's counters are updated under its spinlock, from notifier
 * context, and read under it.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "probe.h"

struct probe_file {
	struct mmu_notifier mn;
	bool registered;
	spinlock_t lock;	/* protects seen */
	struct probe_notifier seen;
};

static long probe_entries(struct probe_entries __user *arg)
{
	struct mm_struct *mm = current->mm;
	struct probe_entries e;
	pgd_t *pgd;
	p4d_t *p4d;
	pud_t *pud;
	pmd_t *pmd;

	if (copy_from_user(&e, arg, sizeof(e)))
		return -EFAULT;
	memset(e.entry, 0, sizeof(e.entry));
	mmap_read_lock(mm);
	pgd = pgd_offset(mm, e.addr);
	e.entry[0] = pgd_val(*pgd);
	if (!(e.entry[0] & _PAGE_PRESENT))
		goto out;
	p4d = p4d_offset(pgd, e.addr);
	e.entry[1] = p4d_val(*p4d);
	if (!(e.entry[1] & _PAGE_PRESENT))
		goto out;
	pud = pud_offset(p4d, e.addr);
	e.entry[2] = pud_val(*pud);
	if (!(e.entry[2] & _PAGE_PRESENT) || (e.entry[2] & _PAGE_PSE))
		goto out;
	pmd = pmd_offset(pud, e.addr);
	e.entry[3] = pmd_val(*pmd);
	if (!(e.entry[3] & _PAGE_PRESENT) || (e.entry[3] & _PAGE_PSE))
		goto out;
	e.entry[4] = pte_val(*pte_offset_kernel(pmd, e.addr));
out:
	mmap_read_unlock(mm);
	return copy_to_user(arg, &e, sizeof(e)) ? -EFAULT : 0;
}

static long probe_follow_pfnmap(struct probe_pfnmap __user *arg)
{
	struct mm_struct *mm = current->mm;
	struct follow_pfnmap_args args = { };
	struct probe_pfnmap p;

	if (copy_from_user(&p, arg, sizeof(p)))
		return -EFAULT;
	mmap_read_lock(mm);
	args.vma = vma_lookup(mm, p.addr);
	args.address = p.addr;
	p.ret = args.vma ? follow_pfnmap_start(&args) : -EFAULT;
	if (!p.ret) {
		p.pfn = args.pfn;
		p.writable = args.writable;
		follow_pfnmap_end(&args);
	}
	mmap_read_unlock(mm);
	return copy_to_user(arg, &p, sizeof(p)) ? -EFAULT : 0;
}

static struct probe_file *mn_file(struct mmu_notifier *mn)
{
	return container_of(mn, struct probe_file, mn);
}

static int probe_range_start(struct mmu_notifier *mn,
			     const struct mmu_notifier_range *range)
{
	struct probe_file *pf = mn_file(mn);

	spin_lock(&pf->lock);
	if (!pf->seen.starts || range->start < pf->seen.lo)
		pf->seen.lo = range->start;
	if (range->end > pf->seen.hi)
		pf->seen.hi = range->end;
	pf->seen.bytes += range->end - range->start;
	pf->seen.starts++;
	spin_unlock(&pf->lock);
	return 0;
}

static void probe_range_end(struct mmu_notifier *mn,
			    const struct mmu_notifier_range *range)
{
	struct probe_file *pf = mn_file(mn);

	spin_lock(&pf->lock);
	pf->seen.ends++;
	spin_unlock(&pf->lock);
}

static const struct mmu_notifier_ops probe_mn_ops = {
	.invalidate_range_start = probe_range_start,
	.invalidate_range_end = probe_range_end,
};

static long probe_notifier(struct probe_file *pf,
			   struct probe_notifier __user *arg)
{
	struct probe_notifier seen;
	int err;

	if (!pf->registered) {
		pf->mn.ops = &probe_mn_ops;
		err = mmu_notifier_register(&pf->mn, current->mm);
		if (err)
			return err;
		pf->registered = true;
	}
	spin_lock(&pf->lock);
	seen = pf->seen;
	spin_unlock(&pf->lock);
	return copy_to_user(arg, &seen, sizeof(seen)) ? -EFAULT : 0;
}

static long probe_ioctl(struct file *file, unsigned int cmd,
			unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case PROBE_IOC_ENTRIES:
		return probe_entries(uarg);
	case PROBE_IOC_FOLLOW_PFNMAP:
		return probe_follow_pfnmap(uarg);
	case PROBE_IOC_NOTIFIER:
		return probe_notifier(file->private_data, uarg);
	}
	return -ENOTTY;
}

static int probe_open(struct inode *inode, struct file *file)
{
	struct probe_file *pf = kzalloc(sizeof(*pf), GFP_KERNEL);

	if (!pf)
		return -ENOMEM;
	spin_lock_init(&pf->lock);
	file->private_data = pf;
	return 0;
}

static int probe_release(struct inode *inode, struct file *file)
{
	struct probe_file *pf = file->private_data;

	/* The mm may be gone already; unregister works either way. */
	if (pf->registered)
		mmu_notifier_unregister(&pf->mn, pf->mn.mm);
	kfree(pf);
	return 0;
}

static const struct file_operations probe_fops = {
	.owner = THIS_MODULE,
	.open = probe_open,
	.release = probe_release,
	.unlocked_ioctl = probe_ioctl,
};

static struct miscdevice probe_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "morsel_probe",
	.fops = &probe_fops,
	.mode = 0666,
};

module_misc_device(probe_dev);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("morsel test probe: page-table entries, pfnmap, notifiers");
