/** A gateway of MCP servers alone is told it serves them, not only that it has no models. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startGuidance } from '../../../src/wiring/start-guidance.js';

const facts = { url: 'http://127.0.0.1:47801', configPath: '/tmp/sluice.yaml', configFound: true, hasAdmin: true, storeFlags: '' };

test('MCP servers are named in the guidance and its summary', () => {
  const { lines, summary } = startGuidance({ ...facts, mcpServerIds: ['github', 'files'] });
  assert.match(lines[0]!, /No models are configured yet/);
  assert.match(lines[0]!, /2 MCP servers \(github, files\) are offered at http:\/\/127\.0\.0\.1:47801\/mcp/);
  assert.match(summary, /MCP servers are offered at http:\/\/127\.0\.0\.1:47801\/mcp: github, files/);
});

test('without MCP servers nothing is said of them', () => {
  const { lines, summary } = startGuidance(facts);
  assert.doesNotMatch(lines.join('\n') + summary, /MCP/);
});
