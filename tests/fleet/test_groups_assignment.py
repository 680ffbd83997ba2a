"""The replica groups' assignment (``pi_ask_sdk.fleet.groups``), as a unit: every replica
computes the same owner, the forms spread, and a change of members moves only the forms it
must."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from pi_ask_sdk.errors import InvalidArgument
from pi_ask_sdk.fleet import Fleet
from pi_ask_sdk.fleet.groups import Group, owner
from pi_ask_sdk.fleet.protocol import FleetNames

NAMES = FleetNames()
FORMS = [NAMES.flow(f"h{n % 3}", 100 + n % 5, f"tool:call-{n}") for n in range(3000)]
MEMBERS = ["a1", "b2", "c3", "d4"]


def assign(members: list[str]) -> dict[str, str]:
    return {form: owner(form, members) for form in FORMS}


def test_every_replica_computes_the_same_owner_whatever_the_order_it_lists_members() -> None:
    first = assign(MEMBERS)
    assert assign(list(reversed(MEMBERS))) == first
    assert assign(sorted(MEMBERS, key=lambda m: m[::-1])) == first


def test_the_forms_spread_over_the_members() -> None:
    counts = Counter(assign(MEMBERS).values())
    assert set(counts) == set(MEMBERS)
    for member in MEMBERS:  # 750 each on average
        assert 600 < counts[member] < 900, counts


def test_a_member_that_leaves_moves_only_its_own_forms() -> None:
    before = assign(MEMBERS)
    after = assign([m for m in MEMBERS if m != "b2"])
    moved = {form for form in FORMS if before[form] != after[form]}
    assert moved == {form for form in FORMS if before[form] == "b2"}
    assert "b2" not in after.values()


def test_a_member_that_joins_takes_forms_only_for_itself() -> None:
    before = assign(MEMBERS)
    after = assign([*MEMBERS, "e5"])
    moved = {form for form in FORMS if before[form] != after[form]}
    assert moved
    assert all(after[form] == "e5" for form in moved)
    assert 400 < len(moved) < 800  # about a fifth of them


def test_an_empty_group_has_no_owner() -> None:
    with pytest.raises(ValueError, match="at least one member"):
        owner(FORMS[0], [])


@pytest.mark.asyncio
async def test_a_group_view_counts_itself_and_the_members_heard_within_their_timeout() -> None:
    changes: list[tuple[str, ...]] = []
    group: Group

    def changed() -> None:
        changes.append(group.members)

    group = Group("g", "me", changed)
    try:
        assert list(group.members) == ["me"]
        assert all(group.owns(form) for form in FORMS[:50])  # alone: every form
        group.heard("me", 1.0)  # its own heartbeat changes nothing
        group.heard("other", 1.0)
        assert list(group.members) == ["me", "other"]
        assert changes == [("me", "other")]
        mine = {form for form in FORMS if group.owns(form)}
        assert mine == {form for form in FORMS if owner(form, ["me", "other"]) == "me"}
        group.bye("other")
        assert list(group.members) == ["me"]
        assert changes[-1] == ("me",)
        group.heard("quick", 0.01)  # gone after PRESENCE_FACTOR intervals (at least 0.15 s)
        assert "quick" in group.members
        gone = asyncio.Event()
        group._on_change = gone.set
        await asyncio.wait_for(gone.wait(), 5)
        assert list(group.members) == ["me"]
    finally:
        group.close()


def test_a_group_is_for_answerers_and_has_a_name() -> None:
    with pytest.raises(InvalidArgument, match="group"):
        Fleet(role="observer", group="g")
    with pytest.raises(InvalidArgument, match="group"):
        Fleet(group="")
    assert Fleet(group="g").group == "g"
    assert Fleet().group is None


@pytest.mark.asyncio
@pytest.mark.parametrize("first", ["me", "other"])
async def test_a_replica_that_does_not_hear_itself_counts_nobody_gone_until_it_does(
    first: str,
) -> None:
    """A replica stopped (SIGSTOP) or cut off hears neither itself nor the others: their
    silence may be its own, whichever it heard last before it (``first`` heard first); once it
    hears itself again, a member still silent a whole presence timeout later is gone."""
    changes: list[tuple[str, ...]] = []
    group: Group
    gone = asyncio.Event()

    def changed() -> None:
        changes.append(group.members)
        if group.members == ("me",):
            gone.set()

    group = Group("g", "me", changed)
    expired: list[str] = []
    both = asyncio.Event()

    def on_expiry(member: str, alive: bool) -> None:
        if not alive:
            expired.append(member)
            if len(expired) == 2:
                both.set()

    try:
        group._members.watch(on_expiry)
        for member in (first, "me" if first == "other" else "other"):
            group.heard(member, 0.01)
        assert list(group.members) == ["me", "other"]
        await asyncio.wait_for(both.wait(), 5)
        assert sorted(expired) == ["me", "other"]
        assert list(group.members) == ["me", "other"]  # not counted gone: it did not hear itself
        group.heard("me", 1.0)
        # Its heartbeats sent meanwhile may be lost (a restarted server): a timeout more.
        assert list(group.members) == ["me", "other"]
        await asyncio.wait_for(gone.wait(), 5)
        assert changes[-1] == ("me",)
    finally:
        group.close()
