import tls from 'node:tls';
import { DEFAULT_WINDOW, Flag, FrameType, encodeData, parseFrames, type Frame } from '../../src/tunnels/muxado/index.js';

/**
 * A hand-driven agent connection for the robustness suites: raw bytes or muxado frames over
 * TLS to the agent port, every byte burrow answers kept and parsed, and the close observed.
 */
export class RawAgent {
  readonly received: Buffer[] = [];
  readonly closed: Promise<number>;
  private closedAt = 0;
  private readonly openedAt = Date.now();
  /** Send window per stream (what burrow granted), for writes that respect flow control. */
  private readonly windows = new Map<number, number>();
  private waiters: (() => void)[] = [];

  private constructor(readonly socket: tls.TLSSocket) {
    socket.on('data', (chunk: Buffer) => {
      this.received.push(chunk);
      this.wake();
    });
    socket.on('error', () => {});
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.closedAt = Date.now();
        this.wake();
        resolve(this.closedAt - this.openedAt);
      }),
    );
  }

  static async connect(port: number, ca: Buffer): Promise<RawAgent> {
    const socket = tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost' });
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', resolve);
      socket.once('error', reject);
    });
    return new RawAgent(socket);
  }

  get isClosed(): boolean {
    return this.closedAt !== 0;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves when `check` holds (re-checked on every byte received and on close), or throws after `timeoutMs`. */
  async until<T>(what: string, check: () => T | undefined | false, timeoutMs = 5_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = check();
      if (value !== undefined && value !== false) return value;
      if (Date.now() > deadline) throw new Error(`raw agent: timed out waiting for ${what}; got ${this.describe()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  write(bytes: Uint8Array): boolean {
    return this.socket.write(bytes);
  }

  /** Every frame burrow sent so far (a frame cut by the close is dropped). */
  frames(): Frame[] {
    return parseFrames(Buffer.concat(this.received), { continueAfterGoAway: true }).frames;
  }

  goAway(): { code: number; debug: string } | undefined {
    const frame = this.frames().find((f) => f.type === FrameType.GoAway);
    return frame ? { code: frame.payload.readUInt32BE(4), debug: frame.payload.subarray(8).toString('utf8') } : undefined;
  }

  rst(streamId: number): number | undefined {
    const frame = this.frames().find((f) => f.type === FrameType.Rst && f.streamId === streamId);
    return frame?.payload.readUInt32BE(0);
  }

  /** DATA burrow sent on a stream, concatenated, and whether it ended with FIN. */
  data(streamId: number): { bytes: Buffer; fin: boolean } {
    const frames = this.frames().filter((f) => f.type === FrameType.Data && f.streamId === streamId);
    return { bytes: Buffer.concat(frames.map((f) => f.payload)), fin: frames.some((f) => (f.flags & Flag.Fin) !== 0) };
  }

  /** The JSON reply of an RPC stream, once its FIN came. */
  async reply(streamId: number, timeoutMs = 5_000): Promise<Record<string, unknown>> {
    const { bytes } = await this.until(`the reply on stream ${streamId}`, () => {
      const data = this.data(streamId);
      return data.fin ? data : undefined;
    }, timeoutMs);
    return JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  }

  /** Opens stream `id` with SYN: the 4-byte type, then `body`. */
  open(id: number, type: number, body: string | Buffer = '', fin = false): void {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(type >>> 0);
    const payload = Buffer.concat([head, typeof body === 'string' ? Buffer.from(body) : body]);
    this.windows.set(id, DEFAULT_WINDOW - payload.length);
    this.write(encodeData(id, Flag.Syn | (fin ? Flag.Fin : 0), payload));
  }

  /**
   * Sends `bytes` on an open stream in frames of at most 16 KiB, waiting for burrow's WNDINCs
   * as a polite agent would; stops early when the stream or connection is reset.
   */
  async sendWithinWindow(id: number, bytes: Buffer, timeoutMs = 10_000): Promise<'sent' | 'reset' | 'closed'> {
    const initial = this.windows.get(id) ?? 0;
    let sent = 0;
    while (sent < bytes.length) {
      if (this.isClosed) return 'closed';
      if (this.rst(id) !== undefined) return 'reset';
      const granted = this.grants(id);
      const window = initial + granted - sent;
      if (window <= 0) {
        await this.until('a window grant', () => this.grants(id) > granted || this.rst(id) !== undefined || this.isClosed, timeoutMs);
        continue;
      }
      const size = Math.min(window, 16_384, bytes.length - sent);
      this.write(encodeData(id, 0, bytes.subarray(sent, sent + size)));
      sent += size;
    }
    return 'sent';
  }

  private grants(id: number): number {
    let total = 0;
    for (const f of this.frames()) if (f.type === FrameType.WndInc && f.streamId === id) total += f.payload.readUInt32BE(0);
    return total;
  }

  /** Auth on stream `id` with `token`; resolves with burrow's reply. */
  async auth(token: string, id = 3): Promise<Record<string, unknown>> {
    this.open(id, 0, JSON.stringify(authRequest(token)));
    return this.reply(id);
  }

  destroy(): void {
    this.socket.destroy();
  }

  describe(): string {
    const frames = this.frames().map((f) => `${['RST', 'DATA', 'WNDINC', 'GOAWAY'][f.type] ?? f.type}(${f.streamId},${f.flags},${f.length})`);
    return `${frames.slice(0, 20).join(' ')}${frames.length > 20 ? ` …(${frames.length})` : ''}${this.isClosed ? ' [closed]' : ''}`;
  }
}

export function authRequest(token: string): Record<string, unknown> {
  return {
    Version: ['3', '2'],
    ClientId: '',
    Extra: {
      OS: 'linux',
      Arch: 'x64',
      Authtoken: token,
      Version: 'raw-agent',
      Hostname: '',
      UserAgent: 'raw-agent/1',
      Metadata: '',
      Cookie: '',
      HeartbeatInterval: 10_000_000_000,
      HeartbeatTolerance: 15_000_000_000,
      StopUnsupportedError: '',
      RestartUnsupportedError: '',
      UpdateUnsupportedError: '',
    },
  };
}
