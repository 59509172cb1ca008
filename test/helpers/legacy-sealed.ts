/**
 * A value sealed by the cluster CA's former module (sealed-secrets.ts, `v1:` + base64 of IV, tag
 * and ciphertext), as databases made before sealing.ts served every sealed value hold it.
 */
export const LEGACY_SEALED = {
  key: Buffer.alloc(32, 7),
  context: 'cluster-ca',
  plaintext: '-----BEGIN PRIVATE KEY-----\nlegacy\n-----END PRIVATE KEY-----\n',
  sealed: 'v1:pn5urOpmeMxFf66iQOW/VRLke5Bm1Ct5pAr+d+t0TGUgbWTwkSUpp1P0aOIiaNChNMKAvsPfjCfoxp02pQ/NxsKIyzs9fpF2B9k+OsGwJZKfWdMEd+2NkKg=',
} as const;
