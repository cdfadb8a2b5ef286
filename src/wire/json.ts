/** JSON as every vendor's wire carries it: the object test and tool arguments that may not parse. */

type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * A tool call's arguments as the object an upstream that wants one takes; the model's JSON text
 * is not always whole (a call cut by the output limit), and then the call goes back with none.
 */
export function toolArguments(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}
