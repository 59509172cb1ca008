// @peculiar/x509 uses tsyringe, which needs the Reflect metadata API before the library loads.
// ESM evaluates imports in order, so every module of this directory imports x509 from here.
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };
