/* SPDX-License-Identifier: MIT */
/*
 * Send completion from TCP send state (seed 000): pure bookkeeping, no
 * syscalls, so it is unit-testable (tests/unit/test_txc.c).
 *
 * A WR is "handed over" when the kernel accepted the last byte of its
 * FPDUs. In ack mode its WC may only be made once the peer TCP has
 * acknowledged that byte. Two methods of seed 000 decide when:
 *
 *   method 2 (HSN, default): at hand-over record the highest sequence
 *   number HSN = acknowledged-bytes count + send-queue length, i.e. the
 *   stream position one past the WR's last byte. The WR is done once
 *   snd_una passes HSN: (int32_t)(snd_una - HSN) >= 0, wrap-safe.
 *
 *   method 1 (EQL): at hand-over the WR's expected queue length EQL is the
 *   number of bytes queued after its last byte (0 if it is the last);
 *   every later hand-over of n bytes raises the EQL of every pending WR by
 *   n. The WR is done once the send-queue length (SIOCOUTQ) <= EQL.
 *   Raising every entry is O(pending); instead each entry keeps the total
 *   handed-over count at its last byte and EQL = handed_now - that value,
 *   which is the same number.
 *
 * Positions are byte counts modulo 2^32, so all comparisons are modulo
 * 2^32; a socket never has 2^31 bytes queued, so they cannot alias.
 * Entries complete in hand-over order (snd_una only moves forward).
 */
#ifndef XIW_TXC_H
#define XIW_TXC_H

#include <stdbool.h>
#include <stdint.h>

enum xiw_ack_method { XIW_ACK_EQL = 1, XIW_ACK_HSN = 2 };

/**
 * struct xiw_txc - WRs handed over and waiting for the peer's ACK.
 * @method:  enum xiw_ack_method.
 * @tail:    method 2: stream position (acked-bytes space) one past the
 *           last byte handed over. Valid once @synced.
 * @handed:  method 1: bytes handed over in total (mod 2^32).
 * @key/@id: ring of @size (power of two) pending entries: the HSN (method
 *           2) or the @handed value at the WR's last byte (method 1), and
 *           the caller's id (SQ index); [@head - @n, @head) are live.
 */
struct xiw_txc {
	int method;
	bool synced;
	uint32_t tail, handed;
	uint32_t size, head, n;
	uint32_t *key, *id;
};

/**
 * xiw_txc_init() - empty tracker for up to @size (power of two) pending
 * WRs using @method. Return: 0, -EINVAL bad size/method, -ENOMEM.
 */
int xiw_txc_init(struct xiw_txc *t, int method, uint32_t size);
/** xiw_txc_free() - release the ring. */
void xiw_txc_free(struct xiw_txc *t);
/** xiw_txc_reset() - forget every pending WR and the stream position
 *  (new stream, or the QP flushed its SQ). */
void xiw_txc_reset(struct xiw_txc *t);

/**
 * xiw_txc_sync() - set the stream position (method 2) from one consistent
 * measurement: @una_bytes (acknowledged-bytes count, mod 2^32) + @outq
 * (SIOCOUTQ: bytes written but not acknowledged). Needed once per stream
 * before the first xiw_txc_handed(): afterwards the position moves by the
 * bytes we hand over, since nobody else writes to the socket.
 */
void xiw_txc_sync(struct xiw_txc *t, uint32_t una_bytes, uint32_t outq);

/** xiw_txc_handed() - the kernel accepted @n more bytes of ours. */
void xiw_txc_handed(struct xiw_txc *t, uint32_t n);

/**
 * xiw_txc_add() - a WR's last byte was handed over; @after bytes handed
 * over since then (in the same sendmsg, after the WR's last byte).
 * @id: the caller's name for the WR (SQ index).
 * Return: 0, -ENOSPC ring full (the caller sized it to the SQ: a bug).
 */
int xiw_txc_add(struct xiw_txc *t, uint32_t after, uint32_t id);

/** xiw_txc_pending() - number of WRs waiting for their ACK. */
static inline uint32_t xiw_txc_pending(const struct xiw_txc *t)
{
	return t->n;
}

/**
 * xiw_txc_take() - remove the oldest pending WR if the peer has
 * acknowledged all of it.
 * @una_bytes: acknowledged-bytes count now (method 2; mod 2^32).
 * @outq:      SIOCOUTQ now (method 1).
 * @id:        out: the WR's id.
 * Return: true if a WR was taken.
 */
bool xiw_txc_take(struct xiw_txc *t, uint32_t una_bytes, uint32_t outq,
		  uint32_t *id);

/**
 * xiw_txc_target() - acknowledged-bytes count at which the oldest pending
 * WR completes, for arming an ACK watermark; @una_bytes/@outq as for
 * xiw_txc_take() (method 1 derives it from them). Only valid with
 * xiw_txc_pending() > 0.
 */
uint32_t xiw_txc_target(const struct xiw_txc *t, uint32_t una_bytes,
			uint32_t outq);

/**
 * xiw_txc_target_at() - as xiw_txc_target() for the @nth oldest pending
 * WR (0: the oldest). Only valid with @nth < xiw_txc_pending().
 */
uint32_t xiw_txc_target_at(const struct xiw_txc *t, uint32_t una_bytes,
			   uint32_t outq, uint32_t nth);

/** xiw_txc_id_at() - the id given to xiw_txc_add() of the @nth oldest. */
uint32_t xiw_txc_id_at(const struct xiw_txc *t, uint32_t nth);

#endif /* XIW_TXC_H */
