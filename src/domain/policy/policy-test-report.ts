/**
 * The policy test's result for a person (HTTP-POLICY.md §6): each rule and what its actions did,
 * the request to the agent and the answer to the client. Printed by `burrow policy test` and
 * returned as `report` by `POST /traffic_policy/test`.
 */
import type { PolicyConnection } from './activation.js';
import type { Verdict } from './evaluate.js';
import type { HttpDecision } from './http-evaluate.js';
import type { HttpTestInput } from './http-test-input.js';
import type { HttpTestResult } from './policy-test.js';
import type { PolicyProgram, ProgramRule } from './program.js';

function ruleTitle(number: number, name: string | null): string {
  return name === null ? `Rule ${number}` : `Rule ${number} (${JSON.stringify(name)})`;
}

/** The verdict for a person: each rule, what its actions did, then the verdict. */
export function connectionReport(file: string, rules: readonly ProgramRule[], connection: PolicyConnection, verdict: Verdict): string[] {
  const lines: string[] = [];
  const client = connection.clientIp.includes(':') ? `[${connection.clientIp}]` : connection.clientIp;
  const host = connection.endpoint.host ? `${connection.endpoint.host}:${connection.serverPort}` : `port ${connection.serverPort}`;
  lines.push(
    `${file}: ${rules.length} rule${rules.length === 1 ? '' : 's'}; connection from ${client}:${connection.clientPort} to ${host} at ${new Date(connection.now).toISOString()}`,
  );
  for (const rule of rules) {
    const outcome = verdict.rules[rule.number - 1];
    const title = ruleTitle(rule.number, rule.name);
    if (!outcome) {
      lines.push(`${title}: not evaluated (the connection was already closed)`);
      continue;
    }
    if (!outcome.matched) {
      lines.push(outcome.error ? `${title}: not matched: run-time error, counted as false: ${outcome.error}` : `${title}: not matched`);
      continue;
    }
    lines.push(`${title}: matched${rule.expressions.length === 0 ? ' (no expressions)' : ''}`);
    outcome.actions.forEach((action, index) => {
      const label = `  action ${index + 1} ${action.type}`;
      switch (action.type) {
        case 'deny':
        case 'close-connection':
          lines.push(`${label}: connection closed`);
          break;
        case 'log':
          lines.push(`${label}: ${JSON.stringify(action.metadata)}${action.error ? ` (errors: ${action.error})` : ''}`);
          break;
        case 'restrict-ips': {
          const why = action.matched_cidr ? `matched ${action.matched_cidr}` : action.action === 'deny' ? 'in no allowed CIDR' : 'in no denied CIDR';
          const effect = action.action === 'deny' ? (action.enforced ? ', connection closed' : ', not enforced (enforce: false)') : '';
          lines.push(`${label}: ${action.action} (${why})${effect}${action.error ? ` (errors: ${action.error})` : ''}`);
          break;
        }
        case 'terminate-tls':
          lines.push(`${label}: TLS terminated at burrow (${action.config.min_version} to ${action.config.max_version})`);
          break;
        case 'set-vars':
          lines.push(`${label}: ${JSON.stringify(action.vars)}${action.error ? ` (errors: ${action.error})` : ''}`);
      }
    });
  }
  if (verdict.errors.length > 0) lines.push(`Run-time errors: ${verdict.errors.length} (each counted as false or left out, as on a live connection)`);
  lines.push(
    verdict.closedBy
      ? `Verdict: closed by ${ruleTitle(verdict.closedBy.rule, verdict.closedBy.name).replace('Rule', 'rule')}, action ${verdict.closedBy.action} (${verdict.closedBy.type})`
      : 'Verdict: allowed',
  );
  return lines;
}

/** The result for a person: each phase's rules and actions, the request to the agent, the answer. */
export function httpReport(file: string, program: PolicyProgram, input: HttpTestInput, result: HttpTestResult): string[] {
  const out = [`${file}: ${input.method} ${input.target} to ${input.scheme}://${headerOf(input.headers, 'host')}`];
  out.push(...phaseLines('on_http_request', program.phases.on_http_request, result.request));
  if (result.forwarded) {
    out.push('Request to the agent:', `  ${result.forwarded.method} ${result.forwarded.target} HTTP/1.1`, ...headerLines(result.forwarded.headers));
    if (input.body) out.push(`  (body: ${input.body.length} bytes)`);
  } else out.push('Request to the agent: none (the policy answered)');
  if (result.response) out.push(...phaseLines('on_http_response', program.phases.on_http_response, result.response));
  if (result.answer) {
    out.push(`Answer to the client: ${result.answer.status}`, ...headerLines(result.answer.headers));
    if (result.answer.compressed) out.push(`  (body compressed with ${result.answer.compressed})`);
    if (result.answer.body) out.push(`  body: ${JSON.stringify(result.answer.body)}`);
  } else out.push("Answer to the client: the agent's (give --response-status to run on_http_response)");
  out.push(result.allowed ? 'Verdict: reaches the agent' : 'Verdict: answered by the policy');
  return out;
}

function phaseLines(phase: string, rules: readonly ProgramRule[], decision: HttpDecision): string[] {
  if (rules.length === 0) return [`${phase}: no rules`];
  const out = [`${phase}:`];
  const last = decision.taken.at(-1);
  for (const rule of rules) {
    const title = rule.name === null ? `  Rule ${rule.number}` : `  Rule ${rule.number} (${JSON.stringify(rule.name)})`;
    const taken = decision.taken.filter((t) => t.rule === rule.number);
    const errors = decision.errors.filter((e) => e.rule === rule.number);
    if (taken.length === 0) {
      const after = decision.answer !== undefined && last !== undefined && rule.number > last.rule;
      out.push(after ? `${title}: not evaluated (the policy already answered)` : `${title}: not matched${errors.length > 0 ? `: run-time error, counted as false: ${errors[0]!.message}` : ''}`);
      continue;
    }
    out.push(`${title}: matched${rule.expressions.length === 0 ? ' (no expressions)' : ''}`);
    taken.forEach((action, i) => {
      const answered = decision.answer !== undefined && action === last ? `: answered ${decision.answer.status}${loginNote(decision)}` : '';
      out.push(`    action ${i + 1} ${action.type}${answered}`);
    });
    for (const error of errors) out.push(`    error in ${error.at}: ${error.message}`);
  }
  for (const metadata of decision.logs) out.push(`  log: ${JSON.stringify(metadata)}`);
  return out;
}

/** A login action's answer: an offline trial carries no session, so the login would start. */
function loginNote(decision: HttpDecision): string {
  const login = decision.login?.config;
  return login ? ` (no login session here: the client is sent to log in with ${login.kind === 'oauth' ? 'OAuth provider' : 'OpenID provider'} ${login.provider}, then back to ${decision.login!.redirectPath})` : '';
}

function headerLines(headers: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2) out.push(`  ${headers[i]}: ${headers[i + 1]}`);
  return out;
}

function headerOf(headers: readonly string[], name: string): string {
  for (let i = 0; i + 1 < headers.length; i += 2) if (headers[i]!.toLowerCase() === name) return headers[i + 1]!;
  return '';
}
