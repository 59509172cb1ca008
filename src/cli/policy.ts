import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { configFor, print } from './context.js';

/** `burrow policy validate <file>`: the server's own validator, offline. Exit status 0 or 1. */
export function policyCommand(): Command {
  const policy = new Command('policy').description('work with traffic policy documents');
  policy
    .command('validate <file>')
    .description('check a traffic policy document (YAML or JSON, "-" for stdin) as PUT /edges/tls/{id}/traffic_policy would')
    .option('--max-rules <n>', 'rules allowed (default: MAX_POLICY_RULES, else 25)')
    .action(async (file: string, options: { maxRules?: string }, command: Command) => {
      const maxRules = options.maxRules === undefined ? configFor(command).maxPolicyRules : Number(options.maxRules);
      if (!Number.isInteger(maxRules) || maxRules < 1 || maxRules > 1000) throw new Error('--max-rules must be a whole number from 1 to 1000.');
      const source = file === '-' ? await readStdin() : await readFile(file, 'utf8');
      const { validatePolicy } = await import('../domain/policy/index.js');
      const result = validatePolicy(source, { maxRules });
      if (result.ok) {
        const rules = result.policy.rules.length;
        print(`${file}: valid (${rules} rule${rules === 1 ? '' : 's'}).`);
        return;
      }
      process.stderr.write(`${file}: ${result.error.code}: ${result.error.message}\n`);
      process.exitCode = 1;
    });
  return policy;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
