// postgres-pass: skip (in process: the token counter, no store)
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { before, describe, test } from 'node:test';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { alwaysStartsPiece, countUsage, LONGEST_SLICE, sliceEnd } from '../src/generation/token-counter.js';

/** The tokenizer run on the whole text at once: the figure Sluice's count must match for ordinary text. */
const plainCount = (text: string) => encode(text, { disallowedSpecial: new Set() }).length;
const counted = async (text: string) => (await countUsage([text], [])).input;

/**
 * Counts a large text, failing if the event loop never turned meanwhile. Each test below that counts
 * megabytes starts with a small one: a counter that holds the loop fails that in seconds, where a
 * megabyte would freeze this process for minutes (the runner's own timeout needs the loop too).
 */
async function countedCooperatively(text: string): Promise<number> {
  let turned = false;
  setImmediate(() => (turned = true));
  const tokens = await counted(text);
  assert.ok(turned, `the event loop turned while ${text.length.toLocaleString('en')} characters were counted`);
  return tokens;
}

const MULTILINGUAL = [
  "It's a test: don't they'll we've I'm you'd SHE'S O'Neill rock'n'roll.",
  'Größenwahn und Straßenbahnhaltestellenüberdachung; élève, naïve, façade, œuvre.',
  'Съешь же ещё этих мягких французских булок, да выпей чаю.',
  'ฉันกินข้าวแล้ววันนี้อากาศดีมากเลยนะครับพวกเราจะไปเที่ยวทะเลกัน',
  'عندما يريد العالم أن يتكلّم فهو يتحدّث بلغة يونيكود.',
  'हिन्दी में लिखा गया एक छोटा सा वाक्य।',
  '😀 👍🏽 🇫🇷 👨‍👩‍👧 𝐀𝐁𝐂 𠀀𠀁 e\u0301 a\u{E0100}',
  '  indented\tcode();\r\n\r\n\n   if (x) { return y["k"] ?? 1_000_000 / 3.14159; }\n\n\n',
  'https://example.com/a/b?c=d&e=f#g  SGVsbG8gd29ybGQhIFRoaXMgaXMgYmFzZTY0Lg== 0xDEADBEEF 2026-11-25T19:04:14Z',
  '{"role":"user","content":[{"type":"text","text":"Hi"}]}\u00a0\u3000\u2028\ufeff\u200b',
  // A Chinese paragraph longer than one slice, with no spaces: cut only where a word must end.
  '天地玄黄宇宙洪荒日月盈昃辰宿列张寒来暑往秋收冬藏闰余成岁律吕调阳云腾致雨露结为霜金生丽水玉出昆冈剑号巨阙珠称夜光果珍李柰菜重芥姜海咸河淡鳞潜羽翔龙师火帝鸟官人皇始制文字乃服衣裳推位让国有虞陶唐吊民伐罪周发殷汤坐朝问道垂拱平章爱育黎首臣伏戎羌遐迩一体率宾归王鸣凤在竹白驹食场化被草木赖及万方盖此身发四大五常恭惟鞠养岂敢毁伤女慕贞洁男效才良知过必改得能莫忘罔谈彼短靡恃己长信使可覆器欲难量墨悲丝染诗赞羔羊景行维贤克念作圣德建名立形端表正空谷传声虚堂习听祸因恶积福缘善庆尺璧非宝寸阴是竞资父事君曰严与敬孝当竭力忠则尽命。',
].join('\n');

before(async () => {
  await countUsage(['loads the tokenizer tables once, so no test below waits on that'], []);
});

describe("Sluice's token count", () => {
  test('ordinary text counts exactly what the tokenizer gives for the whole text', async () => {
    // Ordinary prose: the README and the documentation pages, as one text.
    const docs = new URL('../docs/', import.meta.url);
    const prose = [new URL('../README.md', import.meta.url), ...readdirSync(docs).sort().map((name) => new URL(name, docs))]
      .map((url) => readFileSync(url, 'utf8'))
      .join('\n');
    for (const text of [prose, MULTILINGUAL, MULTILINGUAL.repeat(20), 'word '.repeat(5000), '']) {
      assert.equal(await counted(text), plainCount(text));
    }
    const usage = await countUsage([MULTILINGUAL, 'and a prompt', [1, 2, 3], 7], [prose]);
    assert.equal(usage.input, plainCount(MULTILINGUAL) + plainCount('and a prompt') + 3 + 1);
    assert.equal(usage.output, plainCount(prose));
  });

  test('every place a slice may end leaves the count of the text around it unchanged', () => {
    const parts = ['a', 'Z', 'é', '中', 'ก', '\u0e31', '\u0301', "'", 's', 'll', '1', '22', ' ', '  ', '\t', '\n', '\r\n', '.', '/', '!', '😀', '𝐀', '\u{E0100}', '\u00a0', '。', 'ǅ', '٣'];
    let seed = 1;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    let boundaries = 0;
    for (let round = 0; round < 2000; round++) {
      let text = '';
      for (let i = 0, n = 3 + Math.floor(random() * 20); i < n; i++) text += parts[Math.floor(random() * parts.length)];
      const whole = plainCount(text);
      for (let at = 1; at < text.length; at++) {
        if (!alwaysStartsPiece(text, at)) continue;
        boundaries++;
        assert.equal(plainCount(text.slice(0, at)) + plainCount(text.slice(at)), whole, `${JSON.stringify(text)} cut at ${at}`);
      }
    }
    assert.ok(boundaries > 5000, 'the texts offered many boundaries');
  });

  test('a megabyte without a boundary (letters, punctuation, whitespace) counts to a sensible figure', { timeout: 60_000 }, async () => {
    await countedCooperatively('x'.repeat(100_000));
    const megabyte = 1_000_000;
    for (const unit of ['x', 'ab', '.', '!?', '-', ' ', '\n', ' \t', '7', '中', '😀']) {
      const run = unit.repeat(megabyte / unit.length);
      // 4,800 characters is 20 whole slices: cheap for the tokenizer alone, and the same shape.
      const perSample = plainCount(unit.repeat(LONGEST_SLICE * 20 / unit.length)) / (LONGEST_SLICE * 20);
      const tokens = await countedCooperatively(run);
      assert.ok(tokens > 0, `${JSON.stringify(unit)} run counted`);
      // A run cut hard every LONGEST_SLICE characters counts a token or two more or less per cut.
      const expected = perSample * megabyte;
      const cuts = Math.ceil(megabyte / LONGEST_SLICE);
      assert.ok(Math.abs(tokens - expected) <= 2 * cuts, `${JSON.stringify(unit)}: ${tokens} tokens, about ${expected} expected`);
      assert.ok(tokens <= megabyte, 'never more tokens than characters');
    }
  });

  test('twice the text costs twice the count: no run grows past a slice', { timeout: 60_000 }, async () => {
    await countedCooperatively('x'.repeat(100_000));
    for (const unit of ['x', 'É', '...', '   ', '𝐀']) {
      const once = await countedCooperatively(unit.repeat(300_000));
      const twice = await countedCooperatively(unit.repeat(600_000));
      assert.ok(Math.abs(twice - 2 * once) <= 2, `${JSON.stringify(unit)}: ${once} then ${twice}`);
    }
  });

  test('a count lets the event loop turn: an immediate set before it fires before it ends', { timeout: 60_000 }, async () => {
    const fired: string[] = [];
    setImmediate(() => fired.push('immediate'));
    const tokens = await counted('x'.repeat(100_000));
    fired.push(`count of ${tokens}`);
    assert.deepEqual(fired, ['immediate', 'count of 12500']);
  });

  test('text that looks like a control token is counted as text', async () => {
    const text = 'Before <|endoftext|> after <|im_start|>user';
    assert.equal(await counted(text), plainCount(text));
  });

  test('a slice never ends between the halves of a surrogate pair', () => {
    for (const text of ['a' + '𝐀'.repeat(1000), '𝐀'.repeat(1000), '.' + '😀'.repeat(1000)]) {
      for (let start = 0; start < text.length; ) {
        const end = sliceEnd(text, start);
        assert.ok(end > start && end - start <= LONGEST_SLICE);
        const code = text.charCodeAt(end - 1);
        assert.ok(end === text.length || !(code >= 0xd800 && code <= 0xdbff), `cut after a high surrogate at ${end}`);
        start = end;
      }
    }
  });
});
