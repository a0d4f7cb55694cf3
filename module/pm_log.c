// SPDX-License-Identifier: GPL-2.0
/*
 * The store log of persistent devices, for crash testing (tests/pm_crash):
 * /sys/fs/morselfs/pm_log, root only, and only when the module is loaded
 * with pm_log=1 (the test VM does; a production module has no log, and
 * its stores only test a flag that is never set).  Writing "start N" arms a log of N
 * bytes, "mark" appends an operation boundary, "stop" disarms it (and
 * fails with EFBIG if the log overflowed); reading returns what was
 * logged since "start": records of struct mpm_log_rec, each followed by
 * @len bytes (the value of a store, the bytes written; none for a mark).
 * Replaying a prefix of the records on an image of the device taken at
 * "start" gives the device as a crash after that many stores leaves it
 * (eADR: a store is persistent once visible, and x86 makes stores visible
 * in order).
 *
 * While armed, every store of pm.c's helpers is made and recorded under
 * log_lock, so the log's order is the order the stores were made in; with
 * the log off the helpers only test log_on.  Data written into data pages
 * (write(2)) is recorded after the copy, from the page.
 */
#include <linux/fs.h>
#include <linux/kobject.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <linux/vmalloc.h>

#include "morsel.h"
#include "pm_log.h"

bool morsel_pm_log_on;
static bool pm_log;
module_param(pm_log, bool, 0444);
MODULE_PARM_DESC(pm_log, "offer /sys/fs/morselfs/pm_log, the store log for crash tests");
static DEFINE_SPINLOCK(log_lock);
static DEFINE_MUTEX(log_mutex);		/* start, stop, read */
static u8 *log_buf;
static size_t log_size, log_len;
static bool log_overflow;

/* Append a record.  Caller holds log_lock. */
static void log_add(u64 off, u32 kind, const void *data, u32 len)
{
	struct mpm_log_rec rec = { .offset = off, .len = len, .kind = kind };

	if (log_overflow || log_len + sizeof(rec) + len > log_size) {
		log_overflow = true;
		return;
	}
	memcpy(log_buf + log_len, &rec, sizeof(rec));
	if (len)
		memcpy(log_buf + log_len + sizeof(rec), data, len);
	log_len += sizeof(rec) + len;
}

void morsel_pm_log_store(u64 off, u64 *word, u64 val)
{
	spin_lock(&log_lock);
	WRITE_ONCE(*word, val);
	log_add(off, MPM_LOG_STORE, &val, sizeof(val));
	spin_unlock(&log_lock);
}

u64 morsel_pm_log_xchg(u64 off, u64 *word, u64 val)
{
	u64 old;

	spin_lock(&log_lock);
	old = xchg(word, val);
	log_add(off, MPM_LOG_STORE, &val, sizeof(val));
	spin_unlock(&log_lock);
	return old;
}

bool morsel_pm_log_cmpxchg(u64 off, u64 *word, u64 *old, u64 new)
{
	bool done;

	spin_lock(&log_lock);
	done = try_cmpxchg64(word, old, new);
	if (done)
		log_add(off, MPM_LOG_STORE, &new, sizeof(new));
	spin_unlock(&log_lock);
	return done;
}

void morsel_pm_log_bytes(u64 off, void *dst, const void *src, size_t len)
{
	spin_lock(&log_lock);
	if (src)
		memcpy(dst, src, len);
	else
		memset(dst, 0, len);
	log_add(off, MPM_LOG_BYTES, dst, len);
	spin_unlock(&log_lock);
}

void morsel_pm_log_written(u64 off, const void *addr, size_t len)
{
	spin_lock(&log_lock);
	log_add(off, MPM_LOG_BYTES, addr, len);
	spin_unlock(&log_lock);
}

static ssize_t pm_log_read(struct file *file, struct kobject *kobj,
			   struct bin_attribute *attr, char *buf, loff_t pos,
			   size_t count)
{
	ssize_t n = 0;

	mutex_lock(&log_mutex);
	spin_lock(&log_lock);
	if (log_buf && pos < log_len) {
		n = min_t(size_t, count, log_len - pos);
		memcpy(buf, log_buf + pos, n);
	}
	spin_unlock(&log_lock);
	mutex_unlock(&log_mutex);
	return n;
}

static ssize_t pm_log_write(struct file *file, struct kobject *kobj,
			    struct bin_attribute *attr, char *buf, loff_t pos,
			    size_t count)
{
	unsigned long size;
	char cmd[32];
	u8 *old = NULL, *nbuf;
	ssize_t ret = count;

	if (count >= sizeof(cmd))
		return -EINVAL;
	memcpy(cmd, buf, count);
	cmd[count] = 0;
	strim(cmd);
	mutex_lock(&log_mutex);
	if (!strcmp(cmd, "mark")) {
		spin_lock(&log_lock);
		log_add(0, MPM_LOG_MARK, NULL, 0);
		spin_unlock(&log_lock);
	} else if (!strcmp(cmd, "stop")) {
		/* A helper that saw the log on may still add a record. */
		WRITE_ONCE(morsel_pm_log_on, false);
		if (log_overflow)
			ret = -EFBIG;
	} else if (sscanf(cmd, "start %lu", &size) == 1 && size &&
		   size <= (1UL << 30)) {
		nbuf = vmalloc(size);
		if (!nbuf) {
			ret = -ENOMEM;
		} else {
			spin_lock(&log_lock);
			old = log_buf;
			log_buf = nbuf;
			log_size = size;
			log_len = 0;
			log_overflow = false;
			spin_unlock(&log_lock);
			WRITE_ONCE(morsel_pm_log_on, true);
		}
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&log_mutex);
	vfree(old);
	return ret;
}

static BIN_ATTR(pm_log, 0600, pm_log_read, pm_log_write, 0);

int morsel_pm_log_init(struct kobject *kobj)
{
	return pm_log ? sysfs_create_bin_file(kobj, &bin_attr_pm_log) : 0;
}

void morsel_pm_log_exit(struct kobject *kobj)
{
	if (pm_log)
		sysfs_remove_bin_file(kobj, &bin_attr_pm_log);
	vfree(log_buf);
	log_buf = NULL;
}
