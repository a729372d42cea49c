import type { StoredDocument } from '../storage/document-store';

export interface FileContent {
  content: string;
}

/** What the API returns for a file. */
export interface FileView {
  id: string;
  content: string;
  /** Fencing token of the lock under which the file was last written. */
  fencingToken: string | null;
  writes: number;
}

export function toFileView(document: StoredDocument<FileContent>): FileView {
  return {
    id: document.id,
    content: document.data.content,
    fencingToken: document.fencingToken,
    writes: document.writes,
  };
}
