/** The agent-protocol layer: see README.md in this directory. */
export * from './stream-session.js';
export * from './stream-types.js';
export * from './errors.js';
export * from './messages.js';
export * from './rpc-requests.js';
export * from './json-scanner.js';
export * from './stream-reader.js';
export * from './heartbeat.js';
export * from './proxy.js';
export * from './commands.js';
export * from './agent-connection.js';
