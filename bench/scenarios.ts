import type { LoadSpec } from './load.js';

/** What the scenarios need from a seeded server. */
export interface Seeded {
  apiKey: string;
  /** Credential ids the get/update scenarios rotate through (1,000 of them). */
  credentialIds: string[];
  /** A TLS edge with a 10-rule traffic policy module (compare mode only). */
  edgeId?: string;
}

export interface Scenario {
  name: string;
  describe: string;
  spec(seeded: Seeded): LoadSpec;
}

function headers(apiKey: string, withBody: boolean): Record<string, string> {
  return {
    authorization: `Bearer ${apiKey}`,
    'service-version': '2',
    ...(withBody ? { 'content-type': 'application/json' } : {}),
  };
}

export const SCENARIOS: Record<string, Scenario> = {
  get: {
    name: 'get',
    describe: 'GET /credentials/{id}, rotating over 1,000 seeded ids',
    spec: (s) => ({ method: 'GET', path: '/credentials/{id}', ids: s.credentialIds, headers: headers(s.apiKey, false) }),
  },
  create: {
    name: 'create',
    describe: 'POST /credentials {description, acl} (each one fdatasyncs the WAL, group commit)',
    spec: (s) => ({
      method: 'POST',
      path: '/credentials',
      body: JSON.stringify({ description: 'bench create', acl: ['bind:*.example.com'] }),
      headers: headers(s.apiKey, true),
    }),
  },
  update: {
    name: 'update',
    describe: 'PATCH /credentials/{id} {description}, rotating over 1,000 seeded ids',
    spec: (s) => ({
      method: 'PATCH',
      path: '/credentials/{id}',
      ids: s.credentialIds,
      body: JSON.stringify({ description: 'bench update {n}' }),
      headers: headers(s.apiKey, true),
    }),
  },
  list: {
    name: 'list',
    describe: 'GET /credentials?limit=100 (first page, newest first)',
    spec: (s) => ({ method: 'GET', path: '/credentials?limit=100', headers: headers(s.apiKey, false) }),
  },
  list_deep: {
    name: 'list_deep',
    describe: 'GET /credentials?limit=100&before_id={id}, pages starting anywhere in the table',
    spec: (s) => ({
      method: 'GET',
      path: '/credentials?limit=100&before_id={id}',
      ids: s.credentialIds,
      headers: headers(s.apiKey, false),
    }),
  },
  policy: {
    name: 'policy',
    describe: 'GET /edges/tls/{id}/traffic_policy of a 10-rule module',
    spec: (s) => {
      if (!s.edgeId) throw new Error('the policy scenario needs a seeded edge');
      return { method: 'GET', path: `/edges/tls/${s.edgeId}/traffic_policy`, headers: headers(s.apiKey, false) };
    },
  },
};
