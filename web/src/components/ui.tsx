// Small building blocks every form uses: labelled fields, the password toggle, the submit
// button with its pending state, error and notice boxes, and an accessible dialog.
import { useEffect, useId, useRef, useState, type ReactNode } from "react";
import { describe } from "../errors";
import { useLanguage, useT } from "../i18n";

export function Field(props: {
  label: string;
  name: string;
  type?: string;
  value: string;
  onChange: (v: string) => void;
  autoComplete?: string;
  required?: boolean;
  error?: string | null;
  placeholder?: string;
  hint?: ReactNode;
  disabled?: boolean;
}) {
  const id = useId();
  const t = useT();
  return (
    <div className="field">
      <label htmlFor={id}>{t(props.label)}</label>
      <input
        id={id}
        name={props.name}
        type={props.type ?? "text"}
        value={props.value}
        onChange={(e) => props.onChange(e.target.value)}
        autoComplete={props.autoComplete}
        required={props.required}
        placeholder={props.placeholder}
        disabled={props.disabled}
        aria-invalid={props.error ? true : undefined}
        aria-describedby={props.error ? `${id}-error` : undefined}
      />
      {props.hint}
      {props.error && (
        <span id={`${id}-error`} className="field-error">
          {t(props.error)}
        </span>
      )}
    </div>
  );
}

/** A password input with a show/hide toggle. */
export function PasswordField(props: {
  label: string;
  name: string;
  value: string;
  onChange: (v: string) => void;
  autoComplete: "current-password" | "new-password";
  error?: string | null;
  /** Shown under the field before anything is typed (the rules a new password follows). */
  hint?: string;
}) {
  const id = useId();
  const t = useT();
  const [lang] = useLanguage();
  // "Show password" in English; a language with capitalised nouns keeps the label as it is.
  const field = lang === "en" ? props.label.toLowerCase() : t(props.label);
  const [shown, setShown] = useState(false);
  const described = [props.hint ? `${id}-hint` : null, props.error ? `${id}-error` : null].filter(Boolean).join(" ");
  return (
    <div className="field">
      <label htmlFor={id}>{t(props.label)}</label>
      <span className="password">
        <input
          id={id}
          name={props.name}
          type={shown ? "text" : "password"}
          value={props.value}
          onChange={(e) => props.onChange(e.target.value)}
          autoComplete={props.autoComplete}
          required
          aria-invalid={props.error ? true : undefined}
          aria-describedby={described || undefined}
        />
        <button
          type="button"
          className="secondary"
          aria-pressed={shown}
          aria-label={shown ? t("Hide {field}", { field }) : t("Show {field}", { field })}
          onClick={() => setShown((s) => !s)}
        >
          {shown ? t("Hide") : t("Show")}
        </button>
      </span>
      {props.hint && !props.error && (
        <span id={`${id}-hint`} className="muted hint">
          {t(props.hint)}
        </span>
      )}
      {props.error && (
        <span id={`${id}-error`} className="field-error">
          {t(props.error)}
        </span>
      )}
    </div>
  );
}

export function Submit(props: { pending: boolean; children: ReactNode; disabled?: boolean; className?: string }) {
  const t = useT();
  return (
    <button type="submit" disabled={props.pending || props.disabled} aria-busy={props.pending} className={props.className}>
      {props.pending ? t("Please wait…") : props.children}
    </button>
  );
}

/** The error of a failed request, as a sentence. */
export function ErrorBox({ error }: { error: unknown }) {
  const t = useT();
  if (!error) return null;
  return (
    <div role="alert" className="alert">
      {describe(error, t)}
    </div>
  );
}

export function Notice({ children }: { children: ReactNode }) {
  return (
    <div role="status" className="notice">
      {children}
    </div>
  );
}

const FOCUSABLE = 'button, [href], input, select, textarea, [tabindex]:not([tabindex="-1"])';

/** A modal dialog: focus moves in, Tab stays inside, Escape closes, focus returns after. */
export function Dialog(props: { title: string; onClose: () => void; children: ReactNode }) {
  const t = useT();
  const ref = useRef<HTMLDivElement>(null);
  const titleId = useId();
  const { onClose } = props;
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    const first = ref.current?.querySelector<HTMLElement>(FOCUSABLE);
    first?.focus();
    return () => before?.focus();
  }, []);
  const onKeyDown = (e: React.KeyboardEvent) => {
    if (e.key === "Escape") {
      e.stopPropagation();
      onClose();
      return;
    }
    if (e.key !== "Tab" || !ref.current) return;
    const items = Array.from(ref.current.querySelectorAll<HTMLElement>(FOCUSABLE)).filter((el) => !el.hasAttribute("disabled"));
    if (items.length === 0) return;
    const first = items[0]!;
    const last = items[items.length - 1]!;
    if (e.shiftKey && document.activeElement === first) {
      e.preventDefault();
      last.focus();
    } else if (!e.shiftKey && document.activeElement === last) {
      e.preventDefault();
      first.focus();
    }
  };
  return (
    <div className="overlay" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div ref={ref} className="dialog" role="dialog" aria-modal="true" aria-labelledby={titleId} onKeyDown={onKeyDown}>
        <h2 id={titleId}>{t(props.title)}</h2>
        {props.children}
      </div>
    </div>
  );
}

/** What a confirmation runs: a mutation (TanStack Query's shape) called without arguments. */
export interface Action {
  isPending: boolean;
  error: unknown;
  mutate: () => void;
  reset: () => void;
}

/** "Are you sure?" before something that cannot be undone; closing forgets the action's error. */
export function Confirm(props: { title: string; body: ReactNode; confirm: string; action: Action; onClose: () => void }) {
  const t = useT();
  const { action } = props;
  const close = () => {
    action.reset();
    props.onClose();
  };
  return (
    <Dialog title={props.title} onClose={close}>
      <div className="stack">
        <div>{typeof props.body === "string" ? t(props.body) : props.body}</div>
        <ErrorBox error={action.error} />
        <div className="row">
          <button type="button" className="secondary" onClick={close}>
            {t("Cancel")}
          </button>
          <button type="button" className="danger" disabled={action.isPending} aria-busy={action.isPending} onClick={() => action.mutate()}>
            {action.isPending ? t("Please wait…") : t(props.confirm)}
          </button>
        </div>
      </div>
    </Dialog>
  );
}

/** A secret shown once (a new API key, a webhook's signing secret), with a copy button. */
export function ShownOnce(props: { label: string; intro: ReactNode; secret: string; onDone: () => void }) {
  const t = useT();
  const [copied, setCopied] = useState(false);
  return (
    <div className="notice" role="status">
      <p>{props.intro}</p>
      <p>
        <code aria-label={t(props.label)} className="secret">
          {props.secret}
        </code>
      </p>
      <div className="row">
        <button
          type="button"
          onClick={() =>
            void navigator.clipboard?.writeText(props.secret).then(
              () => setCopied(true),
              () => setCopied(false),
            )
          }
        >
          {copied ? t("Copied") : t("Copy")}
        </button>
        <button type="button" className="secondary" onClick={props.onDone}>
          {t("Done")}
        </button>
      </div>
    </div>
  );
}
