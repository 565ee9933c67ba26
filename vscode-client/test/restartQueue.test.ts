import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RestartQueue } from "../src/restartQueue";

/** A restart that waits until the test lets it finish, recording when it starts and ends. */
function controllableRestart() {
  const events: string[] = [];
  const finishers: (() => void)[] = [];
  let started = 0;
  const restart = () => {
    const index = ++started;
    events.push(`start ${index}`);
    return new Promise<void>((resolve) =>
      finishers.push(() => {
        events.push(`end ${index}`);
        resolve();
      }),
    );
  };
  const finishNext = async () => {
    // Let the queue reach its next await before finishing the running restart.
    await new Promise((r) => setImmediate(r));
    finishers.shift()?.();
    await new Promise((r) => setImmediate(r));
  };
  return { restart, events, finishNext, startedCount: () => started };
}

/** Fails the request whose restart threw, so that the test fails. */
function unexpectedError(error: unknown): never {
  assert.fail(`unexpected restart error: ${String(error)}`);
}

describe("RestartQueue", () => {
  it("runs a single request once", async () => {
    const { restart, events, finishNext } = controllableRestart();
    const queue = new RestartQueue(restart, unexpectedError);
    const done = queue.request();
    await finishNext();
    await done;
    assert.deepEqual(events, ["start 1", "end 1"]);
    assert.equal(queue.isRunning, false);
  });

  it("folds every request made during a restart into exactly one more, never overlapping", async () => {
    const { restart, events, finishNext, startedCount } = controllableRestart();
    const queue = new RestartQueue(restart, unexpectedError);
    const first = queue.request();
    const queued = [queue.request(), queue.request(), queue.request()];
    assert.equal(startedCount(), 1);
    await finishNext();
    assert.equal(startedCount(), 2);
    await finishNext();
    await Promise.all([first, ...queued]);
    assert.deepEqual(events, ["start 1", "end 1", "start 2", "end 2"]);
  });

  it("resolves a queued request only after the restart that covers it", async () => {
    const { restart, finishNext } = controllableRestart();
    const queue = new RestartQueue(restart, unexpectedError);
    let firstDone = false;
    let queuedDone = false;
    void queue.request().then(() => (firstDone = true));
    void queue.request().then(() => (queuedDone = true));
    await finishNext();
    assert.equal(firstDone, true);
    assert.equal(queuedDone, false);
    await finishNext();
    assert.equal(queuedDone, true);
  });

  it("queues again once the queued restart has started", async () => {
    const { restart, events, finishNext } = controllableRestart();
    const queue = new RestartQueue(restart, unexpectedError);
    void queue.request();
    void queue.request();
    await finishNext(); // restart 2 starts
    const third = queue.request(); // requested during restart 2: one more
    await finishNext();
    await finishNext();
    await third;
    assert.deepEqual(events, ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]);
  });

  it("reports a failed restart and goes on with the queued one", async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const queue = new RestartQueue(async () => {
      calls += 1;
      if (calls === 1) throw new Error("interpreter vanished");
    }, (error) => errors.push(error));
    await Promise.all([queue.request(), queue.request()]);
    assert.equal(calls, 2);
    assert.equal(errors.length, 1);
    assert.match(String(errors[0]), /interpreter vanished/);
    await queue.request();
    assert.equal(calls, 3);
  });
});
