/* SPDX-License-Identifier: GPL-2.0 */
/* The store log of persistent devices, for crash testing (pm_log.c). */
#ifndef MORSEL_PM_LOG_H
#define MORSEL_PM_LOG_H

#include <linux/kobject.h>
#include <linux/types.h>
#include "pm_format.h"

extern bool morsel_pm_log_on;

void morsel_pm_log_store(u64 off, u64 *word, u64 val);
u64 morsel_pm_log_xchg(u64 off, u64 *word, u64 val);
bool morsel_pm_log_cmpxchg(u64 off, u64 *word, u64 *old, u64 new);
void morsel_pm_log_bytes(u64 off, void *dst, const void *src, size_t len);
void morsel_pm_log_written(u64 off, const void *addr, size_t len);
int morsel_pm_log_init(struct kobject *kobj);
void morsel_pm_log_exit(struct kobject *kobj);

#endif /* MORSEL_PM_LOG_H */
