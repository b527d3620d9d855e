"""python-rq (which stores results with XADD ... MAXLEN ~ inside MULTI and reads them with
XREVRANGE) against the real server: enqueue, a burst worker, results read back, the failed-job
registry and requeue. Runs against redis-server too (`--peer redis`)."""

import pytest
import redis
import rq

import rq_jobs


@pytest.fixture
def conn(server):
    c = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=10)
    c.flushall()
    yield c
    c.close()


def test_enqueue_burst_worker_results(conn):
    q = rq.Queue("work", connection=conn)
    jobs = [q.enqueue(rq_jobs.add, i, 10 * i) for i in range(20)]
    assert q.count == 20
    # rq's forking worker (a work horse process per job), in burst mode.
    assert rq.Worker([q], connection=conn).work(burst=True)
    assert q.count == 0
    for i, job in enumerate(jobs):
        job.refresh()
        assert job.get_status() == rq.job.JobStatus.FINISHED
        assert job.return_value() == 11 * i
        results = job.results()
        assert len(results) == 1 and results[0].type == rq.results.Result.Type.SUCCESSFUL
    # rq keeps results in one stream per job.
    assert conn.type(f"rq:results:{jobs[0].id}") == b"stream"


def test_failed_job_registry_and_requeue(conn, tmp_path):
    flag = tmp_path / "fail"
    flag.write_text("x")
    q = rq.Queue("work", connection=conn)
    job = q.enqueue(rq_jobs.flaky, str(flag))
    rq.SimpleWorker([q], connection=conn).work(burst=True)
    job.refresh()
    assert job.get_status() == rq.job.JobStatus.FAILED
    reg = q.failed_job_registry
    assert job.id in reg.get_job_ids()
    latest = job.latest_result()
    assert latest.type == rq.results.Result.Type.FAILED and "the flag file exists" in latest.exc_string
    flag.unlink()
    reg.requeue(job.id)
    assert job.id not in reg.get_job_ids()
    assert q.count == 1
    rq.SimpleWorker([q], connection=conn).work(burst=True)
    job.refresh()
    assert job.get_status() == rq.job.JobStatus.FINISHED
    assert job.return_value() == "recovered"
    assert [r.type for r in job.results()] == [rq.results.Result.Type.SUCCESSFUL, rq.results.Result.Type.FAILED]
