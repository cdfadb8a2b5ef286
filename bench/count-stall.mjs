// How long one token count holds the event loop, and how long it takes, for 1 MB texts that
// defeat a byte-pair tokenizer (runs without spaces) and for ordinary text. Uses the build
// (`npm run build` first): node bench/count-stall.mjs [characters, default 1000000]
import { readdirSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { countUsage } from '../dist/generation/token-counter.js';

const size = Number(process.argv[2] ?? 1_000_000);
const random = (alphabet) => Array.from({ length: size }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join('').slice(0, size);
// Ordinary prose: the README and the documentation pages, repeated to the size.
const docs = new URL('../docs/', import.meta.url);
const prose = [new URL('../README.md', import.meta.url), ...readdirSync(docs).sort().map((name) => new URL(name, docs))]
  .map((url) => readFileSync(url, 'utf8'))
  .join('\n');
const ordinary = prose.repeat(Math.ceil(size / prose.length)).slice(0, size);
const texts = {
  'x run': 'x'.repeat(size),
  'random letters, no spaces': random('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'),
  punctuation: random('.,;:!?-_/*&^%$#@()[]{}<>|~`"+='),
  whitespace: random(' \t\n\r'),
  digits: random('0123456789'),
  'random CJK, no punctuation': random(Array.from({ length: 2000 }, (_, i) => String.fromCodePoint(0x4e00 + i))),
  emoji: random(['😀', '🚀', '🎉', '👍🏽', '🧪']),
  'ordinary text (README and docs)': ordinary,
};

await countUsage(['warm up: loads the tokenizer tables'], []);
console.log(`${size.toLocaleString('en')} characters each\n`);
// On a busy machine the worst stall also holds the time the process waited for a core or for a
// garbage collection; the 99th percentile of the loop's delay is closer to what a count holds.
console.log('| text | tokens | count time | worst loop stall (timer) | loop delay p50 / p99 / max (histogram) |');
console.log('|---|---:|---:|---:|---:|');
for (const [name, text] of Object.entries(texts)) {
  let worstLateness = 0;
  let expected = performance.now() + 1;
  // A 1 ms timer: how late it fires is how long the loop was held.
  const ticker = setInterval(() => {
    const now = performance.now();
    worstLateness = Math.max(worstLateness, now - expected);
    expected = now + 1;
  }, 1);
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  await new Promise((resolve) => setTimeout(resolve, 20));
  worstLateness = 0;
  histogram.reset();
  const started = performance.now();
  const { input } = await countUsage([text], []);
  const took = performance.now() - started;
  histogram.disable();
  clearInterval(ticker);
  console.log(`| ${name} | ${input.toLocaleString('en')} | ${took.toFixed(0)} ms | ${worstLateness.toFixed(1)} ms | ${[histogram.percentile(50), histogram.percentile(99), histogram.max].map((ns) => (ns / 1e6).toFixed(1)).join(' / ')} ms |`);
}
