import { analyseProfile, describeProfile } from './cpuprofile.js';

/**
 * `node --import tsx bench/analyse-profile.ts <file.cpuprofile> [requests]`: the tables that
 * `npm run bench -- --profile` prints, for any profile of burrow (e.g. one kept with --keep).
 * With the number of requests the profile covers, costs are also shown per request.
 */
const [file, requests] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node --import tsx bench/analyse-profile.ts <file.cpuprofile> [requests]\n');
  process.exit(2);
}
const profile = analyseProfile(file);
process.stdout.write(
  `busy ${profile.busyMs.toFixed(0)} ms of ${profile.wallMs.toFixed(0)} ms counted ` +
    `(${profile.skippedMs.toFixed(0)} ms of start-up before the first request left out)\n\n` +
    `${describeProfile(profile, requests ? Number(requests) : undefined)}\n`,
);
