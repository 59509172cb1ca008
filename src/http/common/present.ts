/** What every described object of the API holds (credentials, API keys, edges, backends, reservations). */
export interface DescribedObject {
  readonly id: string;
  readonly createdAt: string;
  readonly description: string;
  readonly metadata: string;
}

/** The wire fields such an object starts with, as the reference API shows them: empty description and metadata are left out. */
export function presentDescribed(object: DescribedObject, uri: string) {
  return {
    id: object.id,
    uri,
    created_at: object.createdAt,
    description: object.description === '' ? undefined : object.description,
    metadata: object.metadata === '' ? undefined : object.metadata,
  };
}
