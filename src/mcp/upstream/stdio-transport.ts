import { spawn, type ChildProcess } from 'node:child_process';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { McpStdioServerConfig } from '../../config/config-file.js';
import { LineReader, type OversizedMessage } from './message-limit.js';

/** The gateway's own variables a stdio server inherits: enough to find programs and run; never the rest (the gateway's environment holds its secrets). */
const INHERITED_VARIABLES = ['PATH', 'HOME', 'LANG'] as const;
/** A stderr line is logged up to this many characters. */
const STDERR_LINE_CHARS = 2_000;
/** Lines of stderr logged per minute, at most (a chatty server must not flood the log). */
const STDERR_LINES_PER_MINUTE = 120;

export interface StdioTransportOptions {
  /** The largest stdout line (one message) accepted. */
  readonly maxMessageBytes: () => number;
  readonly onOversized: (message: OversizedMessage) => void;
  /** A line the process wrote to stderr (cut to a couple of thousand characters, not yet redacted). */
  readonly onStderrLine: (line: string) => void;
  /** How long `close()` waits after SIGTERM before SIGKILL. */
  readonly killGraceMs: number;
}

/** The environment a stdio server is started with. */
export function stdioEnvironment(config: Pick<McpStdioServerConfig, 'env'>, parent: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_VARIABLES) {
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...config.env };
}

/**
 * The SDK `Transport` over a process Sluice starts (no shell): newline-delimited JSON-RPC on its
 * stdin and stdout, each stdout line capped, stderr handed over line by line. `onclose` fires once,
 * when the process is gone (exited, killed, or never started).
 */
export class StdioProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The protocol revision the Client negotiated (it tells every transport that has this). */
  protocolVersion: string | undefined;

  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;
  private closed = false;
  private stderrWindowStart = 0;
  private stderrLinesInWindow = 0;
  private stderrDropped = 0;

  constructor(
    private readonly config: McpStdioServerConfig,
    private readonly options: StdioTransportOptions,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  setProtocolVersion(version: string): void {
    this.protocolVersion = version;
  }

  start(): Promise<void> {
    if (this.child !== undefined) throw new Error('the stdio transport is already started');
    const child = spawn(this.config.command, this.config.args, {
      cwd: this.config.cwd,
      env: stdioEnvironment(this.config),
      stdio: ['pipe', 'pipe', 'pipe'],
      shell: false,
      // Its own process group, so stopping it stops what it started too (`npx` runs the server as its child).
      detached: process.platform !== 'win32',
      windowsHide: true,
    });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('close', () => resolve()));
    const reader = new LineReader(this.options.maxMessageBytes, (line) => this.receive(line), this.options.onOversized);
    child.stdout!.on('data', (chunk: Buffer) => reader.push(chunk));
    const stderr = new LineReader(STDERR_LINE_CHARS * 4, (line) => this.stderrLine(line), () => this.stderrLine('[a stderr line too long to log]'));
    child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk));
    // A write to a process that has just exited fails with EPIPE: the close that follows says so.
    child.stdin!.on('error', () => undefined);
    let reported = false;
    const gone = (why: Error | undefined) => {
      if (reported) return;
      reported = true;
      if (!this.closed && why !== undefined) this.onerror?.(why);
      this.closed = true;
      this.onclose?.();
    };
    child.once('close', (code, signal) => gone(new Error(signal === null ? `the process exited with code ${code}` : `the process was killed by ${signal}`)));
    return new Promise((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', (error) => {
        // Not started (no such command, no permission): nothing will run, so it is gone now.
        if (child.pid === undefined) {
          reject(error);
          gone(error);
        } else this.onerror?.(error);
      });
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (stdin === undefined || stdin === null || this.closed || stdin.destroyed) throw new Error('the process is not running');
    const line = `${JSON.stringify(message)}\n`;
    // Back-pressure: wait for the pipe to drain, or for the process to be gone (then nothing will drain it).
    if (!stdin.write(line)) await Promise.race([new Promise<void>((resolve) => stdin.once('drain', resolve)), this.exited]);
  }

  /** SIGTERM, then SIGKILL if it is still there after the grace period; resolves once it is gone. */
  async close(): Promise<void> {
    const child = this.child;
    if (child === undefined || this.exited === undefined) {
      this.closed = true;
      this.onclose?.();
      return;
    }
    const wasClosed = this.closed;
    this.closed = true;
    if (!wasClosed && child.exitCode === null && child.signalCode === null) {
      child.stdin?.end();
      signalGroup(child, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), this.options.killGraceMs);
      await this.exited;
      clearTimeout(timer);
    }
  }

  private receive(line: string): void {
    let message: JSONRPCMessage;
    try {
      message = JSONRPCMessageSchema.parse(JSON.parse(line));
    } catch {
      this.onerror?.(new Error(`the process wrote a line that is not a JSON-RPC message (${line.length} characters)`));
      return;
    }
    this.onmessage?.(message);
  }

  private stderrLine(line: string): void {
    const now = Date.now();
    if (now - this.stderrWindowStart >= 60_000) {
      if (this.stderrDropped > 0) this.options.onStderrLine(`[${this.stderrDropped} stderr lines not logged]`);
      this.stderrWindowStart = now;
      this.stderrLinesInWindow = 0;
      this.stderrDropped = 0;
    }
    if (++this.stderrLinesInWindow > STDERR_LINES_PER_MINUTE) {
      this.stderrDropped++;
      return;
    }
    this.options.onStderrLine(line.length > STDERR_LINE_CHARS ? `${line.slice(0, STDERR_LINE_CHARS)}…` : line);
  }
}

/** Signals the process's whole group (it leads one), or the process alone where there are none. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (process.platform !== 'win32' && child.pid !== undefined) process.kill(-child.pid, signal);
    else child.kill(signal);
  } catch {
    // Already gone.
  }
}
