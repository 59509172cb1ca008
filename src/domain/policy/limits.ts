/** Limits on a policy document. Each one is documented in docs/POLICY.md ("Limits"). */

/** SPEC §7.3 / §8: a policy is at most 64 KiB, counted in UTF-8 bytes. */
export const POLICY_MAX_BYTES = 65536;

/** SPEC §7.3: MAX_POLICY_RULES defaults to 25. */
export const DEFAULT_MAX_RULES = 25;

/** SPEC §7.3: a rule name is at most 255 bytes. */
export const MAX_RULE_NAME_BYTES = 255;

/**
 * Nesting of YAML/JSON collections. A real policy needs about 8 levels; the YAML composer
 * recurses per level and can exhaust the stack (even abort the process) on a few thousand, so
 * depth is measured on the iterative CST before composing.
 */
export const MAX_NESTING_DEPTH = 64;

/** Alias nodes (`*name`) in one document; with the expansion budget below this stops "billion laughs". */
export const MAX_ALIASES = 100;

/** Nodes that aliases may add to the document in total when expanded. */
export const MAX_ALIAS_EXPANSION_NODES = 10_000;

/** One CEL expression (or one `${...}` body), in UTF-8 bytes. */
export const MAX_EXPRESSION_BYTES = 16_384;

/** Structural limits handed to the CEL parser; they also keep its recursion far from the stack limit. */
export const CEL_LIMITS = {
  maxAstNodes: 2000,
  maxDepth: 32,
  maxListElements: 1000,
  maxMapEntries: 100,
  maxCallArguments: 32,
} as const;

/** HTTP actions (HTTP-POLICY.md §2; docs/POLICY.md "HTTP actions" lists each with its source). */
export const HTTP_ACTION_LIMITS = {
  /** add-headers / remove-headers / custom-response and redirect headers: entries per action. */
  headers: 50,
  /** A header value written in a policy, in UTF-8 bytes (before interpolation). */
  headerValueBytes: 8192,
  /** custom-response body, in UTF-8 bytes. */
  bodyBytes: 10_240,
  /** basic-auth: the reference's "up to 10" credentials, passwords of 8 to 128 characters. */
  credentials: 10,
  passwordMinChars: 8,
  passwordMaxChars: 128,
  /** rate-limit: at most this many bucket_key entries; capacity 1 … 1e9; rate 1 s … 24 h. */
  bucketKeys: 10,
  capacityMax: 1_000_000_000,
  rateMinSeconds: 1,
  rateMaxSeconds: 86_400,
  /** set-vars: variables set by one action. */
  vars: 50,
} as const;
