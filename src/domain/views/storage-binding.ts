/** A storage binding and its files as stored, and the binding as the API shows it. */

/** A named, org-scoped, persistent file area; its files are `StorageFileDoc`s with bytes in the `storage` GridFS bucket. */
export interface StorageBindingDoc {
  _id: string;
  org_id: string;
  name: string;
  description: string | null;
  created_at: Date;
  /** Set while a DELETE checks for sessions; new sessions cannot bind it meanwhile. */
  deleting: boolean;
}

/**
 * One file of a binding. `_id` is `<binding id>:<path>`, so a file is read
 * and replaced by `_id`. The bytes live in a blob with its own id: a new
 * version of a file is a new blob, and the record switches to it only once
 * the blob is complete.
 */
export interface StorageFileDoc {
  _id: string;
  org_id: string;
  binding_id: string;
  /** Relative, `/`-separated, never `..`. */
  path: string;
  blob_id: string;
  size_bytes: number;
  sha256: string;
  updated_at: Date;
}

export interface StorageBindingView {
  id: string;
  name: string;
  description: string | null;
  file_count: number;
  size_bytes: number;
  created_at: string;
}

export function storageBindingView(doc: StorageBindingDoc, files: Pick<StorageFileDoc, 'size_bytes'>[]): StorageBindingView {
  return {
    id: doc._id,
    name: doc.name,
    description: doc.description,
    file_count: files.length,
    size_bytes: files.reduce((n, f) => n + f.size_bytes, 0),
    created_at: doc.created_at.toISOString(),
  };
}
