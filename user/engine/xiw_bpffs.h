/* SPDX-License-Identifier: MIT */
/* Where BPF objects are pinned for the host's bpftool (xiw_bpffs.c). */
#ifndef XIW_BPFFS_H
#define XIW_BPFFS_H

#include <stddef.h>

int xiw_bpffs_pin_dir(char *out, size_t cap);

#endif /* XIW_BPFFS_H */
