/* SPDX-License-Identifier: MIT */
/*
 * CM calls for other engine parts (beyond the xiw_conn.h seam).
 */
#ifndef XIW_CM_H
#define XIW_CM_H

#include "xiwarp/xiwarp.h"

/**
 * xiw_cm_qp_gone() - @qp is about to be freed (call from xiw_qp_destroy()
 * before freeing it, without QP locks held). A connect still setting up
 * on @qp (before xiw_qp_attach) is aborted with XIW_CM_CONNECT_ERROR
 * (-ECONNABORTED) so the CM never touches @qp again. Connections the QP
 * already owns are unaffected: they end through xiw_qp_detach() and
 * xiw_cm_stream_closed() as usual. Any thread; waits for the progress
 * thread (runs inline on it).
 */
void xiw_cm_qp_gone(struct xiw_qp *qp);

#endif /* XIW_CM_H */
