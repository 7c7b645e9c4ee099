"""The connection age rule of ``webhook.worker``; the real process is in test_serve.py."""

from __future__ import annotations

from gunicorn.workers.gthread import ThreadWorker

from webhook.worker import WebhookWorker, past_max_age, webhook_worker_class


def test_a_connection_younger_than_the_max_age_stays_open() -> None:
    assert not past_max_age(100.0, 129.9, max_age=30)


def test_a_connection_at_or_past_the_max_age_closes() -> None:
    assert past_max_age(100.0, 130.0, max_age=30)
    assert past_max_age(100.0, 500.0, max_age=30)


def test_a_max_age_of_zero_never_closes() -> None:
    assert not past_max_age(0.0, 1e9, max_age=0)


def test_each_worker_class_carries_its_own_age() -> None:
    short = webhook_worker_class(max_connection_age=2)
    long = webhook_worker_class(max_connection_age=60)
    assert issubclass(short, WebhookWorker) and issubclass(short, ThreadWorker)
    assert (short.max_connection_age, long.max_connection_age) == (2.0, 60.0)
    assert WebhookWorker.max_connection_age == 0.0
