import type { Usage } from '../../generation/model.js';
import { isObject } from '../json.js';
import { TextsByChoice, type EventReading } from '../relay-format.js';
import { usageFromGemini } from './usage.js';

type Json = Readonly<Record<string, unknown>>;

/** The text of a GenerateContentResponse's candidates (thoughts included: they were generated), by candidate index. */
export function addCandidateTexts(response: Json, into: TextsByChoice): void {
  if (!Array.isArray(response.candidates)) return;
  response.candidates.forEach((candidate: unknown, i) => {
    if (!isObject(candidate)) return;
    const index = typeof candidate.index === 'number' ? candidate.index : i;
    const parts = isObject(candidate.content) && Array.isArray(candidate.content.parts) ? candidate.content.parts : [];
    for (const part of parts) {
      if (!isObject(part)) continue;
      into.add(index, typeof part.text === 'string' ? part.text : isObject(part.functionCall) ? JSON.stringify(part.functionCall.args ?? {}) : '');
    }
  });
}

/** generateContent chunks: Google repeats the running totals on every chunk, so the last ones count. */
export class GenerateContentReading implements EventReading {
  private readonly texts = new TextsByChoice();
  reported: Usage | null = null;

  see(event: Json): void {
    addCandidateTexts(event, this.texts);
    this.reported = usageFromGemini(event.usageMetadata) ?? this.reported;
  }

  generated(): readonly string[] {
    return this.texts.list();
  }
}
