import { spawn } from 'node:child_process';
import { cliEnv, SLUICE_BIN, type CliResult } from './sluice.js';

/** Runs the real `sluice` command with text on its standard input. */
export async function cliWithInput(args: string[], input: string, extraEnv: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const env = await cliEnv(args, extraEnv);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE_BIN, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(input);
  });
}

export async function createAccount(dataDir: string, name: string, password: string, admin = false): Promise<void> {
  const result = await cliWithInput(['accounts', 'create', name, ...(admin ? ['--admin'] : []), '--password-stdin', '--data', dataDir], `${password}\n`);
  if (result.code !== 0) throw new Error(`accounts create failed: ${result.stderr}`);
}

export interface PageResponse {
  status: number;
  headers: Headers;
  text: string;
}

/** A browser stand-in over real HTTP: keeps cookies, reads CSRF tokens out of the pages it gets. */
export class ConsoleClient {
  readonly cookies = new Map<string, string>();

  constructor(readonly baseUrl: string) {}

  private remember(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (/max-age=0/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  private cookieHeader(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<PageResponse> {
    const response = await fetch(this.baseUrl + path, { redirect: 'manual', headers: { cookie: this.cookieHeader(), ...headers } });
    this.remember(response);
    return { status: response.status, headers: response.headers, text: await response.text() };
  }

  async post(path: string, fields: Record<string, string | string[]>, headers: Record<string, string> = {}): Promise<PageResponse> {
    const body = new URLSearchParams();
    for (const [name, value] of Object.entries(fields)) for (const v of Array.isArray(value) ? value : [value]) body.append(name, v);
    const response = await fetch(this.baseUrl + path, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body,
    });
    this.remember(response);
    return { status: response.status, headers: response.headers, text: await response.text() };
  }

  /** The CSRF token in a page's forms. */
  static csrfOf(page: string): string {
    const match = /name="csrf" value="([^"]+)"/.exec(page);
    if (!match) throw new Error('no CSRF token on the page');
    return match[1]!;
  }

  /**
   * What a browser would submit from the page's form with `action`, as served: inputs' values,
   * checked boxes, selected options, textareas' text. Enough for the console's own forms.
   */
  static formFields(page: string, action: string): Record<string, string | string[]> {
    const form = new RegExp(`<form method="post" action="${action.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"[^>]*>([\\s\\S]*?)</form>`).exec(page);
    if (!form) throw new Error(`no form posting to ${action} on the page`);
    const unescape = (text: string) => text.replace(/&(lt|gt|quot|#39|amp);/g, (_m, name: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[name]!);
    const attribute = (tag: string, name: string) => {
      const match = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
      return match ? unescape(match[1]!) : undefined;
    };
    const fields: Record<string, string | string[]> = {};
    const add = (name: string, value: string) => {
      const existing = fields[name];
      fields[name] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
    };
    for (const [tag] of form[1]!.matchAll(/<input\b[^>]*>/g)) {
      const name = attribute(tag, 'name');
      if (name === undefined) continue;
      const type = attribute(tag, 'type') ?? 'text';
      if (type === 'checkbox' && !/\schecked\b/.test(tag)) continue;
      add(name, attribute(tag, 'value') ?? (type === 'checkbox' ? 'on' : ''));
    }
    for (const [, tag, options] of form[1]!.matchAll(/(<select\b[^>]*>)([\s\S]*?)<\/select>/g)) {
      const chosen = /<option\b[^>]*\sselected[^>]*>/.exec(options!)?.[0] ?? /<option\b[^>]*>/.exec(options!)?.[0];
      if (chosen !== undefined) add(attribute(tag!, 'name')!, attribute(chosen, 'value') ?? '');
    }
    // The parser drops one newline right after <textarea>.
    for (const [, tag, text] of form[1]!.matchAll(/(<textarea\b[^>]*>)([\s\S]*?)<\/textarea>/g)) add(attribute(tag!, 'name')!, unescape(text!.replace(/^\r?\n/, '')));
    return fields;
  }

  async login(username: string, password: string): Promise<PageResponse> {
    const form = await this.get('/app/login');
    return this.post('/app/login', { csrf: ConsoleClient.csrfOf(form.text), username, password, next: '/app/keys' });
  }

  /** Signs in and returns the session's CSRF token. */
  async signIn(username: string, password: string): Promise<string> {
    const response = await this.login(username, password);
    if (response.status !== 303) throw new Error(`sign-in failed with ${response.status}`);
    return ConsoleClient.csrfOf((await this.get('/app/keys')).text);
  }
}
