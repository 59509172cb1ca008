import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  MessageDecodeError,
  decodeAuth,
  decodeBind,
  decodeCommandResp,
  decodePatchTunnelState,
  decodeProxyHeader,
  decodeStartTunnelWithLabel,
  decodeUnbind,
  echoBindOpts,
  encodeAuthResp,
  encodeBindResp,
  encodeProxyHeader,
  encodeStopTunnel,
  encodeUpdate,
  findKey,
  isSetOptionValue,
} from '../../../src/tunnels/protocol/messages.js';
import { errorReply } from '../../../src/tunnels/protocol/rpc-requests.js';
import { AgentError, AgentErrors, formatAgentError, parseAgentError } from '../../../src/tunnels/protocol/errors.js';

// Requests as the two client families send them (from ngrok-rust proto.rs / ngrok-go msg.go).
const RS_AUTH = {
  Version: ['3', '2'],
  ClientId: '',
  Extra: {
    OS: 'linux',
    Arch: 'x86_64',
    AuthToken: 'tok_rs',
    Version: '1.7.0',
    Hostname: 'h',
    UserAgent: 'ngrok-nodejs/1.7.0',
    Metadata: '',
    Cookie: '',
    HeartbeatInterval: 10_000_000_000,
    HeartbeatTolerance: 15_000_000_000,
    UpdateUnsupportedError: null,
    StopUnsupportedError: '',
    RestartUnsupportedError: 'no restarts here',
    ProxyType: '',
    MutualTLS: false,
    ServiceRun: false,
    ConfigVersion: '',
    CustomInterface: false,
    CustomCAs: true,
    ClientType: 'ngrok-nodejs',
  },
};

describe('decodeAuth', () => {
  it('reads RS keys (AuthToken) and GO keys (Authtoken) alike', () => {
    const rs = decodeAuth(RS_AUTH);
    assert.equal(rs.extra.authToken, 'tok_rs');
    assert.deepEqual(rs.versions, ['3', '2']);
    assert.equal(rs.extra.heartbeatTolerance, 15_000_000_000);
    assert.equal(rs.extra.updateUnsupportedError, null);
    assert.equal(rs.extra.stopUnsupportedError, '');
    assert.equal(rs.extra.restartUnsupportedError, 'no restarts here');
    assert.equal(rs.extra.customCas, true);
    const go = decodeAuth({ Version: ['2'], ClientId: 'ts_1', Extra: { Authtoken: 'tok_go', OS: 'darwin', Fingerprint: null } });
    assert.equal(go.extra.authToken, 'tok_go');
    assert.equal(go.clientId, 'ts_1');
    assert.equal(go.extra.os, 'darwin');
  });

  it('is case-insensitive on every level (extra / EXTRA, version)', () => {
    for (const extraKey of ['extra', 'EXTRA', 'eXtRa']) {
      const a = decodeAuth({ version: ['3'], clientid: 'x', [extraKey]: { AUTHTOKEN: 't', os: 'l' } });
      assert.equal(a.extra.authToken, 't');
      assert.equal(a.extra.os, 'l');
      assert.deepEqual(a.versions, ['3']);
      assert.equal(a.clientId, 'x');
    }
  });

  it('exact key wins over a case variant; among variants the last wins (Go rule)', () => {
    assert.equal(decodeAuth({ Extra: { authtoken: 'a', AuthToken: 'exact', AUTHTOKEN: 'b' } }).extra.authToken, 'exact');
    assert.equal(decodeAuth({ Extra: { authtoken: 'a', AUTHTOKEN: 'b' } }).extra.authToken, 'b');
    assert.equal(findKey({ a: 1 }, 'A'), 'a');
    assert.equal(findKey({}, '__proto__'), undefined);
  });

  it('missing and null fields take zero values; wrong types fail', () => {
    const a = decodeAuth({});
    assert.deepEqual(a.versions, []);
    assert.equal(a.extra.authToken, '');
    assert.equal(a.extra.stopUnsupportedError, null);
    assert.throws(() => decodeAuth({ Version: '3' }), MessageDecodeError);
    assert.throws(() => decodeAuth({ Extra: { AuthToken: 5 } }), /Extra.AuthToken: expected a string/);
    assert.throws(() => decodeAuth({ Extra: { HeartbeatInterval: '10s' } }), MessageDecodeError);
    assert.throws(() => decodeAuth([]), /must be a JSON object/);
    assert.throws(() => decodeAuth('x'), MessageDecodeError);
  });
});

describe('decodeBind', () => {
  const httpOpts = {
    Domain: '',
    Hostname: 'app.example.com',
    Auth: '',
    Subdomain: '',
    HostHeaderRewrite: false,
    LocalUrlScheme: null,
    ProxyProto: 2,
    Compression: null,
    CircuitBreaker: null,
    IPRestriction: { allow_cidrs: ['10.0.0.0/8'] },
    BasicAuth: null,
    OAuth: null,
    OIDC: null,
    WebhookVerification: null,
    MutualTLSCA: null,
    RequestHeaders: null,
    ResponseHeaders: null,
    WebsocketTCPConverter: null,
    UserAgentFilter: null,
    TrafficPolicy: '{"on_tcp_connect":[]}',
  };

  it('canonical view of http opts; Opts kept as received', () => {
    const b = decodeBind({
      Id: '',
      Proto: 'https',
      ForwardsTo: 'localhost:80',
      ForwardsProto: '',
      Opts: httpOpts,
      Extra: { Token: '', IPPolicyRef: '', Metadata: 'm', Bindings: ['public'], PoolingEnabled: true },
    });
    assert.equal(b.proto, 'https');
    assert.equal(b.options.hostname, 'app.example.com');
    assert.equal(b.options.proxyProto, 2);
    assert.deepEqual(b.options.ipRestriction, { allowCidrs: ['10.0.0.0/8'], denyCidrs: [] });
    assert.equal(b.options.trafficPolicy, '{"on_tcp_connect":[]}');
    assert.deepEqual(b.options.otherOptions, []);
    assert.equal(b.opts, b.opts);
    assert.deepEqual(b.opts, httpOpts);
    assert.deepEqual(b.extra.bindings, ['public']);
    assert.equal(b.extra.poolingEnabled, true);
    assert.equal(b.extra.metadata, 'm');
  });

  it('lists other options set, by canonical name, whatever the key case', () => {
    const b = decodeBind({
      Proto: 'http',
      opts: {
        hostname: 'x',
        basicauth: { credentials: [{ username: 'u' }] },
        Compression: {}, // RS: Some(Compression{}) = on
        localurlscheme: 'https',
        HostHeaderRewrite: false,
        CircuitBreaker: null,
        RequestHeaders: { add: [] },
        UserAgentFilter: [],
        Auth: '',
        SomethingNew: 1,
      },
    });
    assert.equal(b.options.hostname, 'x');
    assert.deepEqual(b.options.otherOptions, ['BasicAuth', 'Compression', 'LocalUrlScheme', 'RequestHeaders', 'SomethingNew']);
  });

  it('tcp and tls opts', () => {
    const t = decodeBind({ Proto: 'tcp', Opts: { Addr: '127.0.0.1:20001', ProxyProto: 0, IPRestriction: null, TrafficPolicy: null } });
    assert.equal(t.options.addr, '127.0.0.1:20001');
    assert.equal(t.options.ipRestriction, null);
    assert.equal(t.options.trafficPolicy, null);
    const tls = decodeBind({
      Proto: 'tls',
      Opts: { Hostname: 'a.b', Subdomain: '', ProxyProto: 0, MutualTLSAtAgent: true, TLSTermination: { cert: 'QQ==', key: 'QQ==' } },
    });
    assert.deepEqual(tls.options.otherOptions, ['MutualTLSAtAgent', 'TLSTermination']);
  });

  it('IPRestriction with empty lists is no restriction; sub-keys any case', () => {
    assert.equal(decodeBind({ Opts: { IPRestriction: {} } }).options.ipRestriction, null);
    assert.deepEqual(decodeBind({ Opts: { iprestriction: { DENY_CIDRS: ['1.2.3.4/32'] } } }).options.ipRestriction, {
      allowCidrs: [],
      denyCidrs: ['1.2.3.4/32'],
    });
  });

  it('traffic policy object is re-serialised; bad ProxyProto fails', () => {
    assert.equal(decodeBind({ Opts: { TrafficPolicy: { on_tcp_connect: [] } } }).options.trafficPolicy, '{"on_tcp_connect":[]}');
    assert.equal(decodeBind({ Opts: { TrafficPolicy: '' } }).options.trafficPolicy, null);
    assert.throws(() => decodeBind({ Opts: { ProxyProto: 3 } }), /ProxyProto/);
    assert.throws(() => decodeBind({ Opts: { ProxyProto: '1' } }), /ProxyProto/);
    assert.throws(() => decodeBind({ Opts: [] }), /Opts: expected an object/);
  });

  it('isSetOptionValue rules', () => {
    for (const v of [undefined, null, '', 0, false, []]) assert.equal(isSetOptionValue(v), false, JSON.stringify(v));
    for (const v of [{}, { a: null }, 'x', 1, true, [0]]) assert.equal(isSetOptionValue(v), true, JSON.stringify(v));
  });
});

describe('other requests', () => {
  it('Unbind, StartTunnelWithLabel, PatchTunnelState', () => {
    assert.deepEqual(decodeUnbind({ id: 'tn_1', Extra: null }), { id: 'tn_1' });
    const l = decodeStartTunnelWithLabel({ labels: { edge: 'edghts_1', Env: 'Prod' }, ForwardsTo: 'x', Metadata: '' });
    assert.deepEqual(l.labels, { edge: 'edghts_1', Env: 'Prod' });
    assert.throws(() => decodeStartTunnelWithLabel({ Labels: { a: 1 } }), /Labels.a/);
    const p = decodePatchTunnelState({ TunnelId: 'tn_1', PoolingEnabled: true });
    assert.deepEqual(p, { tunnelId: 'tn_1', name: null, description: null, metadata: null, poolingEnabled: true, trafficPolicy: null });
  });

  it('command replies', () => {
    assert.equal(decodeCommandResp({}), '');
    assert.equal(decodeCommandResp({ Error: '' }), '');
    assert.equal(decodeCommandResp({ error: 'nope' }), 'nope');
  });
});

describe('encoders write the exact PascalCase names', () => {
  it('AuthResp', () => {
    assert.equal(
      JSON.stringify(encodeAuthResp('3', { clientId: 'ts_1', extra: { region: 'local', cookie: 'c' } })),
      '{"Version":"3","ClientId":"ts_1","Extra":{"Version":"","Region":"local","Cookie":"c","AccountName":"","SessionDuration":0,"PlanName":"","Banner":""}}',
    );
    const withWarn = encodeAuthResp('2', {
      clientId: 'x',
      extra: { deprecationWarning: { nextMin: '3.0.0', nextDate: null, msg: 'm' }, connectAddresses: [{ region: 'eu', serverAddr: 'a:1' }] },
    });
    assert.deepEqual((withWarn.Extra as Record<string, unknown>).DeprecationWarning, { NextMin: '3.0.0', NextDate: '0001-01-01T00:00:00Z', Msg: 'm' });
    assert.deepEqual((withWarn.Extra as Record<string, unknown>).ConnectAddresses, [{ Region: 'eu', ServerAddr: 'a:1' }]);
  });

  it('BindResp echoes Opts with the bound hostname, every RS-required field present', () => {
    const req = decodeBind({ Proto: 'https', Opts: { hostname: '', Subdomain: 'app', ProxyProto: 0, Compression: null } });
    const opts = echoBindOpts(req.proto, req.opts, { hostname: 'app.burrow.localhost' });
    assert.deepEqual(opts, {
      Subdomain: 'app',
      ProxyProto: 0,
      Compression: null,
      Hostname: 'app.burrow.localhost',
      Auth: '',
      HostHeaderRewrite: false,
    });
    assert.deepEqual(req.opts, { hostname: '', Subdomain: 'app', ProxyProto: 0, Compression: null }, 'request Opts untouched');
    // every option §5 names is written in its PascalCase spelling, whatever case it came in (GO's LocalURLScheme kept)
    const lower = echoBindOpts('http', { localurlscheme: 'http', HOSTHEADERREWRITE: true, proxyproto: 1, x_custom: 1 }, { hostname: 'a.example.com' });
    assert.deepEqual(Object.keys(lower).sort(), ['Auth', 'HostHeaderRewrite', 'Hostname', 'LocalUrlScheme', 'ProxyProto', 'Subdomain', 'x_custom']);
    assert.deepEqual([lower.LocalUrlScheme, lower.HostHeaderRewrite, lower.ProxyProto], ['http', true, 1]);
    assert.equal(echoBindOpts('http', { LocalURLScheme: 'https' }, {}).LocalURLScheme, 'https');
    assert.equal(
      JSON.stringify(encodeBindResp({ id: 'tn_1', url: 'https://app.burrow.localhost', proto: 'https', opts: {}, token: 'tok' })),
      '{"Id":"tn_1","URL":"https://app.burrow.localhost","Proto":"https","Opts":{},"Extra":{"Token":"tok","TunnelID":"tn_1"}}',
    );
    assert.deepEqual(echoBindOpts('tcp', {}, { addr: '127.0.0.1:20000' }), { Addr: '127.0.0.1:20000', ProxyProto: 0 });
    assert.deepEqual(echoBindOpts('tls', { hostname: 'a' }, {}), { Hostname: 'a', Subdomain: '', ProxyProto: 0, MutualTLSAtAgent: false });
  });

  it('error replies carry Error and the other fields', () => {
    assert.equal(JSON.stringify(errorReply(0, 'e')), '{"Version":"","ClientId":"","Error":"e","Extra":{}}');
    assert.equal(
      JSON.stringify(errorReply(1, 'e', { id: 'tn_1', proto: 'tcp', opts: { Addr: '' } })),
      '{"Id":"tn_1","URL":"","Proto":"tcp","Opts":{"Addr":""},"Error":"e","Extra":{"Token":""}}',
    );
    assert.equal(JSON.stringify(errorReply(2, 'e')), '{"Error":"e"}');
    assert.equal(JSON.stringify(errorReply(7, 'e')), '{"Id":"","Error":"e"}');
  });

  it('commands and proxy header', () => {
    assert.equal(JSON.stringify(encodeUpdate({ version: '3.1', permitMajorVersion: true })), '{"Version":"3.1","PermitMajorVersion":true}');
    assert.equal(
      JSON.stringify(encodeStopTunnel({ id: 'tn_1', message: 'gone', errorCode: 316 })),
      '{"Id":"tn_1","Message":"gone","ErrorCode":"ERR_NGROK_316"}',
    );
    assert.equal(JSON.stringify(encodeStopTunnel({ id: 'a', message: 'm', errorCode: 'ERR_NGROK_1' })), '{"Id":"a","Message":"m","ErrorCode":"ERR_NGROK_1"}');
    const h = { id: 'tn_1', clientAddr: '1.2.3.4:5', proto: 'tcp', edgeType: '1' as const, passthroughTls: false };
    assert.equal(JSON.stringify(encodeProxyHeader(h)), '{"Id":"tn_1","ClientAddr":"1.2.3.4:5","Proto":"tcp","EdgeType":"1","PassthroughTLS":false}');
    assert.deepEqual(decodeProxyHeader(encodeProxyHeader(h)), h);
  });
});

describe('error text', () => {
  it('formatAgentError: message, blank line, code line', () => {
    assert.equal(formatAgentError(107, 'bad token'), 'bad token\n\nERR_NGROK_107');
    assert.equal(new AgentError(316, 'a\nb').format(), 'a\nb\n\nERR_NGROK_316');
    assert.equal(formatAgentError(0, 'no code'), 'no code');
    assert.equal(new AgentError(2230, 'policy').errorCode, 'ERR_NGROK_2230');
  });

  it('round-trips through the RS parsing rule', () => {
    const e = new AgentError(316, 'The credential ACL policy does not permit binding this name.\nCredential ID: cr_1\nName: x.example.com');
    assert.deepEqual(parseAgentError(e.format()), { code: 316, message: e.message });
    // a message line starting with ERR_NGROK_ is defused so RS cannot take it for the code
    assert.deepEqual(parseAgentError(formatAgentError(5, 'ERR_NGROK_9 fake')).code, 5);
  });

  it('catalogue codes', () => {
    const codes = [
      AgentErrors.invalidAuthPayload(),
      AgentErrors.unsupportedVersion(['1'], ['3', '2']),
      AgentErrors.unsupportedMessage('PatchTunnelState', '2'),
    ].map((e) => e.code);
    assert.deepEqual(codes, [109, 811, 813]);
    assert.match(AgentErrors.invalidAuthPayload('why').message, /^The authentication payload you specified is not valid\.\nwhy$/);
  });
});
