// Languages of the hosted pages. Every sentence the pages show goes through `t`: the English
// sentence is its own key, and a language is one folder here mapping each English sentence to
// its translation (`de/`); a sentence a language lacks shows in English. Placeholders are
// `{name}`, filled from `vars`. The language is the one picked with the switcher (kept in
// this browser), else the browser's first language we have, else English.
import { createContext, Fragment, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from "react";
import de from "./de";

export const LANGUAGES = {
  en: { name: "English", messages: {} as Record<string, string> },
  de: { name: "Deutsch", messages: de },
} as const;

export type Lang = keyof typeof LANGUAGES;
export type Vars = Record<string, string | number>;
export type T = (text: string, vars?: Vars) => string;

const STORED = "gatehouse.language";

/** The language for a browser that prefers `preferred` (navigator.languages) and picked
 * `stored` before, if it did. */
export function pickLanguage(preferred: readonly string[], stored: string | null): Lang {
  if (stored && stored in LANGUAGES) return stored as Lang;
  for (const tag of preferred) {
    const base = tag.toLowerCase().split("-")[0] ?? "";
    if (base in LANGUAGES) return base as Lang;
  }
  return "en";
}

/** A sentence kept in a table and translated where it is shown (`t(row.label)`): marks it
 * for the catalogue test, as gettext's `N_` does. */
export function marked(text: string): string {
  return text;
}

/** The word `table` gives `key` (a table of `marked` words), in the language of `t`; `key`
 * itself when the table lacks it (a custom role, a value from a newer server). */
export function named(table: Record<string, string>, key: string, t: T): string {
  const word = table[key];
  return word === undefined ? key : t(word);
}

/** Each of a comma-separated list of keys (a member's roles) as `named` gives it. */
export function namedList(table: Record<string, string>, keys: string, t: T): string {
  return keys
    .split(",")
    .map((k) => named(table, k, t))
    .join(", ");
}

/** `text` in `lang`, its placeholders filled. */
export function translate(lang: Lang, text: string, vars?: Vars): string {
  const out = (LANGUAGES[lang].messages as Record<string, string>)[text] ?? text;
  if (!vars) return out;
  return out.replace(/\{(\w+)\}/g, (whole, name: string) => (name in vars ? String(vars[name]) : whole));
}

type Ctx = { lang: Lang; setLang: (l: Lang) => void; t: T };

const LanguageContext = createContext<Ctx>({ lang: "en", setLang: () => {}, t: (s, v) => translate("en", s, v) });

function storedLanguage(): string | null {
  try {
    return window.localStorage.getItem(STORED);
  } catch {
    return null;
  }
}

export function LanguageProvider({ children, initial }: { children: ReactNode; initial?: Lang }) {
  const [lang, setLangState] = useState<Lang>(() => initial ?? pickLanguage(navigator.languages ?? [navigator.language], storedLanguage()));
  const setLang = useCallback((l: Lang) => {
    setLangState(l);
    try {
      window.localStorage.setItem(STORED, l);
    } catch {
      // A browser that keeps nothing: the choice lasts this page.
    }
  }, []);
  useEffect(() => {
    document.documentElement.lang = lang;
  }, [lang]);
  const value = useMemo<Ctx>(() => ({ lang, setLang, t: (s, v) => translate(lang, s, v) }), [lang, setLang]);
  return <LanguageContext.Provider value={value}>{children}</LanguageContext.Provider>;
}

/** The `t` of the page's language. */
export function useT(): T {
  return useContext(LanguageContext).t;
}

/** `text` translated, its `{name}` placeholders filled with React nodes (a bold address, a
 * link): for sentences with markup inside, whose word order differs between languages. */
export function useTx(): (text: string, nodes: Record<string, ReactNode>) => ReactNode {
  const { lang } = useContext(LanguageContext);
  return (text, nodes) =>
    translate(lang, text)
      .split(/\{(\w+)\}/)
      .map((part, i) => <Fragment key={i}>{i % 2 === 1 ? (part in nodes ? nodes[part] : `{${part}}`) : part}</Fragment>);
}

/** The page's language and the way to change it (the switcher). */
export function useLanguage(): [Lang, (l: Lang) => void] {
  const c = useContext(LanguageContext);
  return [c.lang, c.setLang];
}

/** The language switcher: a select of every language, each named in itself. */
export function LanguageSwitcher() {
  const [lang, setLang] = useLanguage();
  const t = useT();
  return (
    <select aria-label={t("Language")} className="language" value={lang} onChange={(e) => setLang(e.target.value as Lang)}>
      {Object.entries(LANGUAGES).map(([code, l]) => (
        <option key={code} value={code} lang={code}>
          {l.name}
        </option>
      ))}
    </select>
  );
}
