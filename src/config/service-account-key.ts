import { z } from 'zod';

/** Google's own token endpoint, for a key that names none. */
const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';

/** The fields of a Google service-account key file that Sluice uses; the rest (project_id, client_id, …) is not needed. */
const serviceAccountKeySchema = z.object({
  type: z.literal('service_account'),
  client_email: z.string().min(1),
  private_key: z.string().includes('PRIVATE KEY-----'),
  private_key_id: z.string().min(1),
  // A private cloud or a test names its own.
  token_uri: z.url({ protocol: /^https?$/ }).default(GOOGLE_TOKEN_URI),
});
export type ServiceAccountKey = z.output<typeof serviceAccountKeySchema>;

/** What each field's problem is called, in words that never quote the key. */
const PROBLEMS: Readonly<Record<string, string>> = {
  type: "is not a service-account key (its 'type' is not service_account; a user's gcloud login, authorized_user, cannot be used: create a key for a service account)",
  client_email: "lacks its 'client_email'",
  private_key: "has no 'private_key' in PEM form",
  private_key_id: "lacks its 'private_key_id'",
  token_uri: "has a 'token_uri' that is not an http(s) URL",
};

/**
 * A service-account key's JSON, as the console takes it pasted and the Vertex adapter reads it from
 * a file: the key, or what is wrong with it (never quoting it, as a parser's message could).
 */
export function readServiceAccountKey(text: string): { readonly key: ServiceAccountKey } | { readonly problem: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { problem: "is not JSON: give the whole key file Google gave (it starts with '{')" };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { problem: 'is not a JSON object: give the whole key file' };
  const read = serviceAccountKeySchema.safeParse(parsed);
  if (read.success) return { key: read.data };
  const field = String(read.error.issues[0]!.path[0] ?? 'type');
  return { problem: PROBLEMS[field] ?? `has a field '${field}' that is not valid` };
}

/**
 * What to redact of a private key: whole, as JSON writes it (its newlines escaped), and each line of
 * its body, since an error quoting a fragment of the PEM quotes whole lines.
 */
export function privateKeySecrets(privateKey: string): string[] {
  const lines = privateKey.split(/\r?\n/).filter((line) => line.length >= 16 && !line.startsWith('-----'));
  return [privateKey, JSON.stringify(privateKey).slice(1, -1), ...lines];
}
