/** The part of the `localtunnel` client's API the bench uses (the package ships no types). */
declare module 'localtunnel' {
  import type { EventEmitter } from 'node:events';

  interface Tunnel extends EventEmitter {
    /** The subdomain the server gave this tunnel. */
    clientId: string;
    url: string;
    close(): void;
  }

  function localtunnel(options: { port: number; host: string; local_host?: string; subdomain?: string }): Promise<Tunnel>;
  export default localtunnel;
}
