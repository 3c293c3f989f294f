"""The claim reader never crashes: any bytes in a claim file (or the build lock) are a holder it
vouches for or None, and a build sweeping such a file removes it by name."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from upstream_env.claims import build_lock, claims_dir, describe, read_holder, wait_for_claims

FUZZ = settings(
    max_examples=200, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip
VALID = json.dumps({"pid": 4242, "host": "gpu-node-1", "session": "train_dali", "since": 1.8e9}).encode()
VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8), st.just([]))


def vouched(holder: dict | None) -> bool:
    return holder is None or (
        set(holder) == {"pid", "host", "session", "since"}
        and type(holder["pid"]) is int
        and holder["pid"] > 0
        and isinstance(holder["host"], str)
        and isinstance(holder["session"], str)
        and type(holder["since"]) is float
    )


@FUZZ
@given(data=st.one_of(st.binary(max_size=200), st.binary(max_size=40).map(lambda b: VALID[:20] + b)))
def test_any_bytes_are_a_holder_or_none(data: bytes) -> None:
    holder = read_holder(data)
    assert vouched(holder)
    assert describe(holder)


@FUZZ
@given(key=st.sampled_from(["pid", "host", "session", "since"]), value=VALUES)
def test_a_field_of_another_type_is_refused_or_vouched_for(key: str, value: object) -> None:
    data = json.dumps({**json.loads(VALID), key: value}).encode()
    holder = read_holder(data)
    assert vouched(holder) and describe(holder)


@FUZZ
@given(data=st.binary(max_size=100))
def test_a_build_removes_a_damaged_free_claim_by_name(data: bytes, tmp_path: Path) -> None:
    env = tmp_path / "env"
    claims_dir(env).mkdir(parents=True, exist_ok=True)
    (claims_dir(env) / "node-1.json").write_bytes(data)
    said: list[str] = []
    with build_lock(env, "test", said.append):
        wait_for_claims(env, "the build", said.append)
    assert len(said) == 1 and "node-1.json" in said[0] and not list(claims_dir(env).iterdir())
