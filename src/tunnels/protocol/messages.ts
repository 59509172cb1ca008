/**
 * The agent protocol's JSON messages (AGENT-PROTOCOL.md §5, §6), one file per family: decoders
 * that read incoming keys case-insensitively into typed canonical messages (json-fields.ts), and
 * encoders that write the exact PascalCase names the agents require. Which request type is
 * served how: rpc-requests.ts.
 */
export { type JsonValue, type JsonObject, MessageDecodeError, isJsonObject, findKey, getField } from './json-fields.js';
export * from './auth-messages.js';
export * from './bind-messages.js';
export * from './tunnel-messages.js';
export * from './command-messages.js';
export { type EdgeTypeString, EdgeType, type ProxyHeader, encodeProxyHeader, decodeProxyHeader } from './proxy.js';
