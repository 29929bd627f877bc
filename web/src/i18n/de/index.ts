// German. Each English sentence the pages show, and its German, in one file per part of the
// pages. To add a language, copy this folder (e.g. `fr/`), translate the right-hand sides, and
// name it in `LANGUAGES` (../index.tsx); `i18n.test.ts` checks that every sentence the pages use
// has a translation in each language.
import pages from "./pages";
import account from "./account";
import admin from "./admin";
import errors from "./errors";

const de: Record<string, string> = { ...pages, ...account, ...admin, ...errors };

export default de;
