import Type from 'typebox';
import { POLICY_MAX_BYTES } from '../../domain/policy/limits.js';
import { Nullable, Utf8Text } from '../common/schemas.js';

const headers = (description: string) => Type.Record(Type.String(), Type.Array(Type.String()), { description });
// Lower bounds are the domain's (policy-trial.ts), answered 215 naming the field as the rest.
const port = (description: string) => Type.Integer({ maximum: 65535, description });

export const PolicyTestBody = Type.Object(
  {
    policy: Utf8Text(POLICY_MAX_BYTES, 'ERR_NGROK_2221', 'The policy document, YAML or JSON: a TLS edge’s module, or an http/https endpoint’s policy when `request` is given.'),
    connection: Type.Optional(
      Nullable(
        Type.Object(
          {
            client_ip: Type.Optional(Nullable(Type.String({ description: 'The client address (default: the caller’s own).' }))),
            client_port: Type.Optional(Nullable(port('The client port (default 50000).'))),
            server_ip: Type.Optional(Nullable(Type.String({ description: 'The address reached (default 127.0.0.1).' }))),
            server_port: Type.Optional(Nullable(port('The port reached (default 443; the endpoint URL’s port when `request` is given).'))),
            endpoint_host: Type.Optional(Nullable(Type.String({ description: 'The endpoint or TLS edge host reached (endpoint.host).' }))),
            region: Type.Optional(Nullable(Type.String({ description: 'conn.server_region (default: this server’s REGION).' }))),
            time: Type.Optional(Nullable(Type.String({ description: 'time.now and conn.ts.start, RFC 3339 (default: now).' }))),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    request: Type.Optional(
      Nullable(
        Type.Object(
          {
            method: Type.Optional(Nullable(Type.String({ description: 'Default GET.' }))),
            path: Type.Optional(Nullable(Type.String({ description: 'With the query; starts with "/" (default "/").' }))),
            headers: Type.Optional(Nullable(headers('Name → values. Host and Content-Length are added as a client would.'))),
            body: Type.Optional(Nullable(Type.String({ description: 'UTF-8 text.' }))),
            endpoint_url: Type.Optional(Nullable(Type.String({ description: 'The endpoint reached, e.g. https://app.example.com (default https://<endpoint_host>).' }))),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    response: Type.Optional(
      Nullable(
        Type.Object(
          {
            status: Type.Integer({ maximum: 599, description: 'The agent’s answer’s status: on_http_response runs on it.' }),
            headers: Type.Optional(Nullable(headers('The agent’s answer’s headers.'))),
          },
          { additionalProperties: false },
        ),
      ),
    ),
  },
  { additionalProperties: false },
);

const evaluationError = Type.Object({ rule: Type.Integer(), name: Nullable(Type.String()), at: Type.String(), message: Type.String() });
const answer = Type.Object({ status: Type.Integer(), headers: headers('Lower-case name → values.'), body: Nullable(Type.String()), compressed: Nullable(Type.String()) });
const httpPhase = Type.Object({
  actions: Type.Array(Type.Object({ rule: Type.Integer(), type: Type.String() }), { description: 'Each action taken, in order.' }),
  errors: Type.Array(evaluationError),
  logs: Type.Array(Type.Unknown(), { description: 'The metadata of each log action, interpolated.' }),
  answered: Nullable(Type.Integer({ description: 'The status of the answer an action made instead of the agent’s.' })),
});

export const PolicyTestResponse = Type.Object({
  allowed: Type.Boolean({ description: 'Whether the request (or, without one, the connection) reaches the agent.' }),
  connection: Type.Object({
    client_ip: Type.String(),
    client_port: Type.Integer(),
    server_ip: Type.String(),
    server_port: Type.Integer(),
    region: Type.String(),
    endpoint_host: Type.String(),
    time: Type.String(),
  }),
  on_tcp_connect: Type.Object({
    rules: Type.Array(
      Type.Object({
        rule: Type.Integer(),
        name: Nullable(Type.String()),
        matched: Type.Boolean(),
        error: Nullable(Type.String()),
        actions: Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true }), { description: 'What each action did.' }),
      }),
      { description: 'The rules evaluated, in order; those after the one that closed the connection are absent.' },
    ),
    closed_by: Nullable(Type.Object({ rule: Type.Integer(), name: Nullable(Type.String()), action: Type.Integer(), type: Type.String() })),
    errors: Type.Array(evaluationError),
  }),
  on_http_request: Nullable(httpPhase),
  on_http_response: Nullable(httpPhase),
  forwarded: Nullable(Type.Object({ method: Type.String(), path: Type.String(), headers: headers('Lower-case name → values, as the agent gets them.') })),
  answer: Nullable(answer),
  report: Type.Array(Type.String(), { description: 'The same result for a person, as `burrow policy test` prints it.' }),
});
