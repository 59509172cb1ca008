/** Auth (stream type 0): the agent's login and burrow's answer (AGENT-PROTOCOL.md §5). */
import { type JsonObject, str, optStr, bool, int, obj, strArray, requireObject } from './json-fields.js';

export interface AuthExtra {
  os: string;
  arch: string;
  /** `Extra.AuthToken` (RS) / `Extra.Authtoken` (GO). Never log it. */
  authToken: string;
  /** The agent's own version (`Extra.Version`). */
  version: string;
  hostname: string;
  userAgent: string;
  metadata: string;
  cookie: string;
  /** Nanoseconds; 0 when not sent. */
  heartbeatInterval: number;
  heartbeatTolerance: number;
  /** null = agent too old (unsupported), "" = supported, other text = unsupported because of it. */
  updateUnsupportedError: string | null;
  stopUnsupportedError: string | null;
  restartUnsupportedError: string | null;
  proxyType: string;
  mutualTls: boolean;
  serviceRun: boolean;
  configVersion: string;
  customInterface: boolean;
  customCas: boolean;
  clientType: string;
}

export interface AuthRequest {
  /** Protocol versions offered, in preference order. */
  versions: string[];
  /** "" for a new session, else the previous session's id. */
  clientId: string;
  extra: AuthExtra;
}

export function decodeAuth(value: unknown): AuthRequest {
  const o = requireObject(value, 'Auth');
  const e = obj(o, 'Extra', '') ?? {};
  const p = 'Extra.';
  return {
    versions: strArray(o, 'Version', ''),
    clientId: str(o, 'ClientId', ''),
    extra: {
      os: str(e, 'OS', p),
      arch: str(e, 'Arch', p),
      authToken: str(e, 'AuthToken', p),
      version: str(e, 'Version', p),
      hostname: str(e, 'Hostname', p),
      userAgent: str(e, 'UserAgent', p),
      metadata: str(e, 'Metadata', p),
      cookie: str(e, 'Cookie', p),
      heartbeatInterval: int(e, 'HeartbeatInterval', p),
      heartbeatTolerance: int(e, 'HeartbeatTolerance', p),
      updateUnsupportedError: optStr(e, 'UpdateUnsupportedError', p),
      stopUnsupportedError: optStr(e, 'StopUnsupportedError', p),
      restartUnsupportedError: optStr(e, 'RestartUnsupportedError', p),
      proxyType: str(e, 'ProxyType', p),
      mutualTls: bool(e, 'MutualTLS', p),
      serviceRun: bool(e, 'ServiceRun', p),
      configVersion: str(e, 'ConfigVersion', p),
      customInterface: bool(e, 'CustomInterface', p),
      customCas: bool(e, 'CustomCAs', p),
      clientType: str(e, 'ClientType', p),
    },
  };
}

export interface AuthResponse {
  /** The session id (`ClientId`). */
  clientId: string;
  extra?: {
    version?: string;
    region?: string;
    cookie?: string;
    accountName?: string;
    /** Seconds. */
    sessionDuration?: number;
    planName?: string;
    banner?: string;
    /** Written only when given (GO parses NextDate as an RFC 3339 time). */
    deprecationWarning?: { nextMin: string; nextDate: Date | null; msg: string };
    /** Written only when given. */
    connectAddresses?: { region: string; serverAddr: string }[];
  };
}

/** `{"Version","ClientId","Extra":{…}}`: RS needs Version and ClientId; GO takes zero values. */
export function encodeAuthResp(version: string, r: AuthResponse): JsonObject {
  const x = r.extra ?? {};
  const extra: JsonObject = {
    Version: x.version ?? '',
    Region: x.region ?? '',
    Cookie: x.cookie ?? '',
    AccountName: x.accountName ?? '',
    SessionDuration: x.sessionDuration ?? 0,
    PlanName: x.planName ?? '',
    Banner: x.banner ?? '',
  };
  if (x.deprecationWarning) {
    const d = x.deprecationWarning;
    extra.DeprecationWarning = {
      NextMin: d.nextMin,
      NextDate: d.nextDate ? d.nextDate.toISOString() : '0001-01-01T00:00:00Z',
      Msg: d.msg,
    };
  }
  if (x.connectAddresses) {
    extra.ConnectAddresses = x.connectAddresses.map((a) => ({ Region: a.region, ServerAddr: a.serverAddr }));
  }
  return { Version: version, ClientId: r.clientId, Extra: extra };
}
