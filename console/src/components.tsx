import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api.js';

/*
 * Everything the API returns is rendered as text children, which Preact escapes: descriptions,
 * metadata and headers are attacker controlled (CONSOLE.md §3). Nothing here sets inner HTML.
 */

export interface Page<T> {
  items: T[];
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** The first page (100 items, newest first) of a collection, reloaded on demand. */
export function useList<T>(path: string, key: string): Page<T> {
  const [items, setItems] = useState<T[]>([]);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const reload = useCallback(() => {
    api.get<Record<string, T[]>>(`${path}?limit=100`).then(
      (page) => {
        setItems(page[key] ?? []);
        setError(undefined);
        setLoading(false);
      },
      (failure: unknown) => {
        setError(failure);
        setLoading(false);
      },
    );
  }, [path, key]);
  useEffect(reload, [reload]);
  return { items, error, loading, reload };
}

export function ErrorNote({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof ApiError ? error.code : undefined;
  const param = error instanceof ApiError ? error.param : undefined;
  return (
    <p role="alert" class="error">
      {message}
      {code ? <small> ({code}{param ? `, field ${param}` : ''})</small> : null}
    </p>
  );
}

/** A destructive action asks once more, in place (no window.confirm: keyboard and tests alike). */
export function ConfirmButton(props: { label: string; confirm: string; onConfirm: () => Promise<unknown> | void; name?: string }) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" class="secondary outline" aria-label={props.name ? `${props.label} ${props.name}` : props.label} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  }
  return (
    <span role="group">
      <button type="button" class="contrast" onClick={() => void Promise.resolve(props.onConfirm()).finally(() => setAsking(false))}>
        {props.confirm}
      </button>
      <button type="button" class="secondary" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = () =>
    navigator.clipboard.writeText(text).then(
      () => setCopied(true),
      () => setCopied(false),
    );
  return (
    <button type="button" class="outline" onClick={copy}>
      {copied ? 'Copied' : label}
    </button>
  );
}

/** A secret shown once, right after it was made, with a copy button and what to do with it. */
export function ShownOnce({ title, secret, children }: { title: string; secret: string; children?: ComponentChildren }) {
  return (
    <article class="shown-once" aria-live="polite">
      <header>
        <strong>{title}</strong> It is shown only now: copy it.
      </header>
      <p>
        <code data-testid="secret">{secret}</code> <CopyButton text={secret} />
      </p>
      {children}
    </article>
  );
}

export function Snippet({ label, text }: { label: string; text: string }) {
  return (
    <details open>
      <summary>{label}</summary>
      <pre>
        <code>{text}</code>
      </pre>
      <CopyButton text={text} label={`Copy: ${label}`} />
    </details>
  );
}

/** Only http(s) URLs become links; anything else (javascript:, data:) stays text. */
export function UrlLink({ url }: { url: string | undefined }) {
  if (!url) return <span>—</span>;
  return /^https?:\/\//i.test(url) ? (
    <a href={url} target="_blank" rel="noopener noreferrer">
      {url}
    </a>
  ) : (
    <span>{url}</span>
  );
}

export function Empty({ loading, what }: { loading: boolean; what: string }) {
  return <p class="muted">{loading ? 'Loading…' : `No ${what} yet.`}</p>;
}

/**
 * A form's submit: runs `action`, keeps the API's error to show in place (cleared on success).
 * Returns the error and the handler for `onSubmit` (or `onClick`).
 */
export function useSubmit(action: () => Promise<unknown>): { error: unknown; onSubmit: (event?: Event) => Promise<void> } {
  const [error, setError] = useState<unknown>(undefined);
  const onSubmit = async (event?: Event) => {
    event?.preventDefault();
    try {
      await action();
      setError(undefined);
    } catch (failure) {
      setError(failure);
    }
  };
  return { error, onSubmit };
}

export interface Column<T> {
  title: string;
  cell: (item: T) => ComponentChildren;
  class?: string;
}

/**
 * A list page's table: one row per item, and optionally a full-width row under an item (its
 * editor or details). `rowProps` adds attributes to an item's row (data-*, handlers).
 */
export function DataTable<T extends { id: string }>(props: {
  items: T[];
  columns: Column<T>[];
  below?: (item: T) => ComponentChildren;
  rowProps?: (item: T) => Record<string, unknown>;
}) {
  const { items, columns, below, rowProps } = props;
  return (
    <div class="overflow-auto">
      <table class="striped stackable">
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column.title}>{column.title}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {items.map((item) => {
            const extra = below?.(item);
            return [
              <tr key={item.id} {...(rowProps?.(item) ?? {})}>
                {columns.map((column) => (
                  <td key={column.title} class={column.class} data-label={column.title}>
                    {column.cell(item)}
                  </td>
                ))}
              </tr>,
              extra ? (
                <tr key={`${item.id}-below`}>
                  <td colSpan={columns.length}>{extra}</td>
                </tr>
              ) : null,
            ];
          })}
        </tbody>
      </table>
    </div>
  );
}

/** A labelled one-line text input. */
export function TextField(props: { label: string; name: string; value: string; onChange: (value: string) => void }) {
  return (
    <label>
      {props.label}
      <input name={props.name} value={props.value} onInput={(e) => props.onChange((e.target as HTMLInputElement).value)} />
    </label>
  );
}

/** A labelled textarea, for lists entered one item a line. */
export function LinesField(props: { label: string; name: string; value: string; onChange: (value: string) => void; placeholder?: string; rows?: number }) {
  return (
    <label>
      {props.label}
      <textarea
        name={props.name}
        rows={props.rows ?? 1}
        placeholder={props.placeholder}
        value={props.value}
        onInput={(e) => props.onChange((e.target as HTMLTextAreaElement).value)}
      />
    </label>
  );
}

/** An id as code. */
export const Id = ({ id }: { id: string }) => <code>{id}</code>;

/** Lines of a textarea, trimmed, blanks dropped. */
export function lines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}
