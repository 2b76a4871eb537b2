"""The service fixtures themselves: the servers found, and the private ones started when none is."""

from __future__ import annotations

import psycopg
import redis

from tests.services import _private_postgres, _private_redis


def test_each_test_gets_a_database_of_its_own(postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as conn:
        conn.execute("CREATE TABLE mine (x int)")
        assert conn.execute("SELECT count(*) FROM mine").fetchone() == (0,)


def test_redis_database_starts_empty(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.dbsize() == 0
        client.set("key", "value")
        assert client.get("key") == b"value"
    finally:
        client.close()


def test_private_servers_start_and_stop() -> None:
    with _private_postgres() as url, psycopg.connect(url) as conn:
        assert conn.execute("SELECT 2").fetchone() == (2,)
    with _private_redis() as url:
        client = redis.Redis.from_url(url)
        try:
            assert client.ping()
        finally:
            client.close()
