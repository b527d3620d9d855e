"""The Celery app of tests/python/test_scripting_frameworks.py: the Redis broker and result
backend at $LOCUS_CELERY_URL; a task (add) and the chord body (total)."""

import os

from celery import Celery

URL = os.environ["LOCUS_CELERY_URL"]
app = Celery("locus_tasks", broker=URL, backend=URL)
app.conf.update(
    broker_connection_retry_on_startup=True,
    broker_connection_max_retries=3,
    result_expires=300,
    worker_prefetch_multiplier=1,
    worker_hijack_root_logger=False,
)


@app.task
def add(x, y):
    return x + y


@app.task
def total(values):
    return sum(values)
