/** One page of a listing: at most `limit` rows after the cursor `after`. */
export interface PageRequest {
  limit: number;
  after: string | null;
}
