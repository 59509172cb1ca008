/** A keyset page request: items older (smaller id) than `beforeId`, newest first. */
export interface Page {
  beforeId?: string | undefined;
  limit: number;
}

export interface PageOf<T> {
  readonly items: T[];
  readonly hasMore: boolean;
}
