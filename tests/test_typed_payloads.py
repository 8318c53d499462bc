"""Typed payloads: `@handler(role, payload_type=T)` with T a dataclass or a pydantic model. The
handler gets the payload as a T; a payload that does not fit fails the attempt for good, naming
the field (run as a worker runs it: pyworker.testing.run_handler, and a real worker in drain
mode); `Client.enqueue(handler, payload)` checks the payload before it is enqueued and sends a T
as its JSON object. Each test declares its handlers in a registry of its own."""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg
import pydantic
import pytest
from pyworker import Client
from pyworker.handlers import Registry
from pyworker.payloads import PayloadMismatch
from pyworker.testing import drain, run_handler
from worker_support import fetch_one


@dataclass
class Address:
    city: str
    zip_code: str | None = None


@dataclass
class Welcome:
    email: str
    name: str = "friend"
    score: float = 0.0
    tags: list[str] = field(default_factory=list)
    address: Address | None = None


class Signup(pydantic.BaseModel):
    email: str
    age: int


def declared(payload_type: type, role: str = "send_welcome") -> tuple[Registry, object]:
    registry = Registry()

    @registry.handler(role, max_retries=2, payload_type=payload_type)
    def handle(task, payload):
        return {"type": type(payload).__name__, "payload": repr(payload)}

    return registry, handle


def test_the_handler_gets_the_payload_as_its_dataclass() -> None:
    _, handle = declared(Welcome)
    outcome = run_handler(handle, {"email": "ada@example.com", "score": 5, "address": {"city": "Oslo"}})
    assert outcome.completed, outcome
    assert outcome.result["type"] == "Welcome"
    assert outcome.result["payload"] == repr(
        Welcome(email="ada@example.com", score=5.0, address=Address(city="Oslo"))
    )


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"name": "Ada"}, 'missing value for field "email"'),
        ({"email": 5}, 'wrong value type for field "email"'),
        ({"email": "a@b", "address": {"zip_code": "1"}}, 'missing value for field "address.city"'),
        ({"email": "a@b", "emial": "typo"}, 'can not match "emial" to any data class field'),
    ],
)
def test_a_payload_that_does_not_fit_fails_for_good_naming_the_field(payload: dict, problem: str) -> None:
    _, handle = declared(Welcome)
    outcome = run_handler(handle, payload)
    assert outcome.failed and outcome.permanent, outcome
    assert outcome.error.startswith("PermanentError: the payload does not fit Welcome: ")
    assert problem in outcome.error


def test_a_pydantic_model_as_the_payload_type() -> None:
    _, handle = declared(Signup)
    fits = run_handler(handle, {"email": "ada@example.com", "age": 36})
    assert fits.completed and fits.result["type"] == "Signup", fits
    refused = run_handler(handle, {"email": "ada@example.com", "age": "old"})
    assert refused.permanent, refused
    assert "the payload does not fit Signup: field age: " in refused.error


def test_an_async_handler_gets_its_typed_payload() -> None:
    registry = Registry()

    @registry.handler("send_welcome", payload_type=Welcome)
    async def handle(task, welcome):
        return {"email": welcome.email}

    assert run_handler(handle, {"email": "ada@example.com"}).result == {"email": "ada@example.com"}


def test_enqueue_by_handler_checks_and_sends_the_payload(conn: psycopg.Connection) -> None:
    conn.execute("SELECT create_role('send_welcome')")
    _, handle = declared(Welcome)
    client = Client(conn)

    task = client.enqueue(handle, Welcome(email="ada@example.com", address=Address(city="Oslo")))
    assert task.role == "send_welcome"
    assert fetch_one(conn, "SELECT payload FROM worker_tasks WHERE id = %s", (task.id,))[0] == {
        "email": "ada@example.com", "name": "friend", "score": 0.0, "tags": [],
        "address": {"city": "Oslo", "zip_code": None},
    }
    assert client.enqueue(handle, {"email": "bob@example.com"}).role == "send_welcome"

    before = fetch_one(conn, "SELECT count(*) FROM worker_tasks")[0]
    with pytest.raises(PayloadMismatch, match='the payload does not fit Welcome: missing value for field "email"'):
        client.enqueue(handle, {"name": "no email"})
    with pytest.raises(ValueError, match='wrong value type for field "email"'):
        client.enqueue(handle, Welcome(email=5))  # a dataclass checks no type itself
    with pytest.raises(PayloadMismatch, match="the payload must be a Welcome .*, not Signup"):
        client.enqueue(handle, Signup(email="a@b", age=1))
    with pytest.raises(ValueError, match="role must be a role name or a handler declared with @handler"):
        client.enqueue(lambda task: None, {})
    assert fetch_one(conn, "SELECT count(*) FROM worker_tasks")[0] == before


def test_enqueue_by_role_name_sends_a_model_as_json(conn: psycopg.Connection) -> None:
    conn.execute("SELECT create_role('signup')")
    task = Client(conn).enqueue("signup", Signup(email="ada@example.com", age=36))
    assert fetch_one(conn, "SELECT payload FROM worker_tasks WHERE id = %s", (task.id,))[0] == {
        "email": "ada@example.com", "age": 36,
    }


def test_a_worker_runs_the_typed_handler_and_fails_a_misfit_for_good(db_url: str, conn: psycopg.Connection) -> None:
    conn.execute("SELECT create_role('send_welcome', max_retries := 2)")
    registry, handle = declared(Welcome)
    client = Client(conn)
    fits = client.enqueue(handle, Welcome(email="ada@example.com"))
    misfit = client.enqueue("send_welcome", {"email": ["not", "a", "string"]})
    conn.commit()

    drain(db_url, "send_welcome", registry=registry)

    assert client.get(fits.id).status == "completed"
    failed = client.get(misfit.id)
    assert failed.status == "failed" and failed.retry_count == 0, "a misfit is not retried"
    assert 'the payload does not fit Welcome: wrong value type for field "email"' in failed.error_message
