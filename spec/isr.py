"""The in-sync replica set, the leader's high watermark and produce acknowledgement.

What it is
    The leader tracks, for every follower, the log end offset it last fetched from and how
    long ago it was last caught up. From that it derives:

    * the ISR: a follower leaves when it has not caught up for `replica.lag.time.max.ms`
      (default 30 s) and rejoins when it has fetched up to the high watermark and to the
      start of the leader's current epoch (KAFKA-7128); the leader itself is always in it;
    * the high watermark: HW := max(HW, min LEO over the ISR) (Kafka's
      `Partition.maybeIncrementLeaderHW`: the smallest LEO of the ISR, never lowered); a
      follower whose LEO the leader has not yet learned in this epoch blocks the advance
      (KIP-320: follower state is reset on election);
      a follower sets HW := min(leader HW in the fetch response, own LEO);
    * produce: `acks=0/1` are answered on append; `acks=all` is refused with
      NOT_ENOUGH_REPLICAS when the ISR is smaller than `min.insync.replicas` (nothing is
      appended) and otherwise completes when the HW passes the record, with
      NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below the minimum meanwhile (the
      record stays in the log: a negative acknowledgement of a committed write).

Where it comes from
    `Partition.maybeShrinkIsr`, `maybeExpandIsr`, `maybeIncrementLeaderHW`,
    `appendRecordsToLeader`, `checkEnoughReplicasReachOffset`, `Replica.isCaughtUp`;
    the Kafka documentation ("Replication"; the broker configs `replica.lag.time.max.ms`,
    `min.insync.replicas` and the producer's `acks`).

Time
    Time is a logical clock. The leader keeps, per follower, the number of ticks since it
    was last caught up, capped at `lag_limit + 1`: only "within the limit or not" matters,
    so capping keeps the state space finite without changing behaviour.
"""

from __future__ import annotations

from spec.types import Acks, ErrorCode


def follower_is_caught_up(
    follower_log_end_offset: int | None,
    leader_log_end_offset: int,
    ticks_since_caught_up: int,
    lag_limit: int,
) -> bool:
    """`Replica.isCaughtUp`: at the leader's LEO, or caught up within `lag_limit` ticks."""
    if follower_log_end_offset == leader_log_end_offset:
        return True
    return ticks_since_caught_up <= lag_limit


def may_join_isr(fetch_offset: int, leader_high_watermark: int, leader_epoch_start_offset: int) -> bool:
    """A follower outside the ISR rejoins once it fetched up to the HW and to the start of
    the leader's epoch, so it holds everything the current leader may have committed."""
    return fetch_offset >= leader_high_watermark and fetch_offset >= leader_epoch_start_offset


def leader_high_watermark(
    current_high_watermark: int,
    leader_log_end_offset: int,
    isr_follower_log_end_offsets: tuple[int | None, ...],
) -> int:
    """The leader's new HW: max(HW, min LEO over the ISR); an unknown follower LEO blocks it.

    The HW never goes back and never passes the leader's LEO (checked by CrossHair):

    pre: 0 <= current_high_watermark <= leader_log_end_offset
    post: current_high_watermark <= __return__ <= leader_log_end_offset
    """
    if None in isr_follower_log_end_offsets:
        return current_high_watermark
    known = [end for end in isr_follower_log_end_offsets if end is not None]
    return max(current_high_watermark, min([leader_log_end_offset, *known]))


def follower_high_watermark(leader_high_watermark_in_response: int, follower_log_end_offset: int) -> int:
    """A follower's HW after a fetch: the leader's HW, but never above what it holds.

    pre: leader_high_watermark_in_response >= 0 and follower_log_end_offset >= 0
    post: __return__ <= follower_log_end_offset
    post: __return__ <= leader_high_watermark_in_response
    """
    return min(leader_high_watermark_in_response, follower_log_end_offset)


def produce_admission(acks: Acks, isr_size: int, min_insync_replicas: int) -> ErrorCode:
    """Whether the leader appends a produce request at all (`appendRecordsToLeader`)."""
    if acks is Acks.ALL and isr_size < min_insync_replicas:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return ErrorCode.NONE


def acks_all_completion(
    offset: int, high_watermark: int, isr_size: int, min_insync_replicas: int
) -> ErrorCode | None:
    """The answer to a waiting acks=all produce of the record at `offset`, or None while it
    still waits (`checkEnoughReplicasReachOffset`).

    A success is only ever answered when the HW passed the record and the ISR is large enough:

    post: __return__ is not ErrorCode.NONE or (high_watermark > offset and isr_size >= min_insync_replicas)
    """
    if high_watermark <= offset:
        return None
    if isr_size < min_insync_replicas:
        return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    return ErrorCode.NONE
