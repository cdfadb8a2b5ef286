import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Limits } from '../../../src/core/key-limits.js';
import { McpAccess } from '../../../src/core/mcp-access.js';
import { ListNotifier, type ListenerStream } from '../../../src/mcp/list-notifier.js';
import type { Siblings } from '../../../src/mcp/siblings.js';
import type { UpstreamMcpServers } from '../../../src/mcp/upstream/upstream-server.js';

type Emit = (serverId: string, list: 'tools' | 'resources' | 'prompts') => void;

/** The registry's list-changed events, and nothing else of it. */
function upstreams(): { servers: UpstreamMcpServers; emit: Emit } {
  const listeners = new Set<Emit>();
  const servers = { onListChanged: (listener: Emit) => (listeners.add(listener), () => listeners.delete(listener)) } as unknown as UpstreamMcpServers;
  return { servers, emit: (serverId, list) => listeners.forEach((listener) => listener(serverId, list)) };
}

/** Two workers' siblings: what one publishes the other hears (as the cluster primary relays it). */
function workerPair(): [Siblings, Siblings] {
  const handlers = [new Map<string, Set<(data: unknown) => void>>(), new Map<string, Set<(data: unknown) => void>>()];
  const publish = (self: number, topic: string, data: unknown) => handlers[1 - self]!.get(topic)?.forEach((handler) => handler(structuredClone(data)));
  const make = (self: number): Siblings => ({
    publish: (topic, data) => publish(self, topic, data),
    publishAndWait: async (topic, data) => publish(self, topic, data),
    subscribe: (topic, handler) => {
      const set = handlers[self]!.get(topic) ?? new Set();
      handlers[self]!.set(topic, set.add(handler));
      return () => set.delete(handler);
    },
  });
  return [make(0), make(1)];
}

const access = McpAccess.of({ mcp: ['web'] } as Limits, null);

function stream(session: string, received: string[], closed: { count: number } = { count: 0 }): ListenerStream {
  return { session, endpoint: '', access, send: (message) => received.push(JSON.parse(message).method), close: () => closed.count++ };
}

describe('list_changed to GET streams', () => {
  test('changes of one list in a window are one notification, on the session’s most recent stream only', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { servers, emit } = upstreams();
    const notifier = new ListNotifier(servers, undefined, 200);
    const older: string[] = [];
    const newer: string[] = [];
    const other: string[] = [];
    notifier.add(stream('s1', older));
    const removeNewer = notifier.add(stream('s1', newer));
    notifier.add(stream('s2', other));
    // A reload replacing a server: its old connection leaves, the new one comes 10 ms later.
    emit('web', 'tools');
    t.mock.timers.tick(10);
    emit('web', 'tools');
    emit('web', 'prompts');
    emit('elsewhere', 'tools');
    t.mock.timers.tick(200);
    assert.deepEqual(newer, ['notifications/tools/list_changed', 'notifications/prompts/list_changed']);
    assert.deepEqual(older, [], 'never the same message on two streams of a session');
    assert.deepEqual(other, ['notifications/tools/list_changed', 'notifications/prompts/list_changed'], 'each session hears it');
    // The newest gone, the older stream is the session's again.
    removeNewer();
    emit('web', 'tools');
    t.mock.timers.tick(200);
    assert.deepEqual(older, ['notifications/tools/list_changed']);
    assert.equal(notifier.size, 2);
    notifier.close();
  });

  test('a stream opened on another worker supersedes this worker’s streams of the session', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const [first, second] = workerPair();
    const a = upstreams();
    const b = upstreams();
    const workerA = new ListNotifier(a.servers, first, 200);
    const workerB = new ListNotifier(b.servers, second, 200);
    const onA: string[] = [];
    const onB: string[] = [];
    workerA.add(stream('s1', onA));
    workerB.add(stream('s1', onB));
    // Each worker hears the upstream change itself.
    a.emit('web', 'tools');
    b.emit('web', 'tools');
    t.mock.timers.tick(200);
    assert.deepEqual(onA, []);
    assert.deepEqual(onB, ['notifications/tools/list_changed']);
    workerA.close();
    workerB.close();
  });

  test('closing a session closes its streams; closing the notifier closes every stream and sends nothing more', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { servers, emit } = upstreams();
    const notifier = new ListNotifier(servers, undefined, 200);
    const closedA = { count: 0 };
    const closedB = { count: 0 };
    const received: string[] = [];
    notifier.add(stream('s1', received, closedA));
    notifier.add(stream('s2', received, closedB));
    notifier.closeSession('s1');
    assert.equal(closedA.count, 1);
    emit('web', 'tools');
    notifier.close();
    t.mock.timers.tick(1000);
    assert.deepEqual(received, []);
    assert.equal(closedB.count, 1);
    assert.equal(notifier.size, 0);
  });
});
