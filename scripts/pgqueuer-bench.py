"""PgQueuer draining no-op jobs: the line `make bench` prints beside herald's claim → decide → record.

    python pgqueuer-bench.py fill DSN ROWS     install PgQueuer's schema, enqueue ROWS no-op jobs
    python pgqueuer-bench.py drain DSN BATCH   one worker drains them, BATCH jobs per dequeue

`drain` prints one JSON line: {"rows": jobs done, "seconds": drain time, "cpu_seconds": this process's
CPU time in the drain}. herald-bench runs both from a throw-away virtualenv and measures the rows and
WAL the drain wrote, and the server's CPU time.
"""

import asyncio
import json
import sys
import time
from datetime import timedelta

import asyncpg
from pgqueuer import AsyncpgDriver, Queries, QueueManager
from pgqueuer.types import QueueExecutionMode


async def fill(dsn: str, rows: int) -> None:
    conn = await asyncpg.connect(dsn)
    queries = Queries(AsyncpgDriver(conn))
    await queries.install()
    for start in range(0, rows, 5_000):
        n = min(5_000, rows - start)
        await queries.enqueue(["noop"] * n, [None] * n, [0] * n)
    await conn.close()


async def drain(dsn: str, batch: int) -> None:
    conn = await asyncpg.connect(dsn)
    qm = QueueManager(Queries(AsyncpgDriver(conn)))
    done = 0

    @qm.entrypoint("noop")
    async def noop(job) -> None:
        nonlocal done
        done += 1

    started, cpu_started = time.perf_counter(), time.process_time()
    await qm.run(batch_size=batch, mode=QueueExecutionMode.drain, dequeue_timeout=timedelta(seconds=1))
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started
    await conn.close()
    print(json.dumps({"rows": done, "seconds": seconds, "cpu_seconds": cpu_seconds}))


if __name__ == "__main__":
    mode, dsn, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    asyncio.run(fill(dsn, n) if mode == "fill" else drain(dsn, n))
