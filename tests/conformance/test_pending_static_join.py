"""A JoinGroup with a pending member id (handed out with MEMBER_ID_REQUIRED, KIP-394) and a
`group.instance.id`: Kafka's `classicGroupJoinExistingMember` throws IllegalStateException
("pending member cannot be a static member"), which the coordinator service answers
UNKNOWN_SERVER_ERROR; the group is left as it was. The spec's reference and impl agree."""

from __future__ import annotations

import pytest

from conformance.coordinator_sut import CoordinatorSettings, make_coordinator
from spec.group.types import Errors, JoinGroupRequest, JoinGroupRequestProtocol, Subscription

PROTOCOLS = (JoinGroupRequestProtocol("range", Subscription(("t",))),)


@pytest.mark.parametrize("target", ["reference", "impl"])
def test_a_pending_member_id_with_an_instance_id_is_an_unknown_server_error(target: str) -> None:
    coordinator = make_coordinator(target, CoordinatorSettings())
    first = coordinator.join_group("g", JoinGroupRequest("", None, "consumer", PROTOCOLS), 0)
    assert first is not None and first.error is Errors.MEMBER_ID_REQUIRED
    before = coordinator.observe("g")
    assert first.member_id in before.pending_members
    answer = coordinator.join_group("g", JoinGroupRequest(first.member_id, "i1", "consumer", PROTOCOLS), 0)
    assert answer is not None and answer.error is Errors.UNKNOWN_SERVER_ERROR
    assert coordinator.observe("g") == before
