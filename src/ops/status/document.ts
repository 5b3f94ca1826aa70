/**
 * The HTML document every status page is drawn in: the head (the one style sheet the CSP allows,
 * an optional reload), a header linking to the overview, the page's body and its footer. The pages
 * give what differs: their title, what the header adds, the body and the footer.
 */
import { escapeHtml } from '../../http/html';
import { STYLE } from './style';

/** One page's parts (`body`, `header` and `footer` are HTML the page made, already escaped). */
export interface DocumentParts {
  /** The document's title. */
  title: string;
  /** The router's title, linked to the overview. */
  siteTitle: string;
  /** Where the router is mounted. */
  base: string;
  /** Reloads itself this often, seconds; none when 0 or left out. */
  refreshSeconds?: number | undefined;
  /** HTML after the title in the header (the search form). */
  header?: string;
  body: string;
  /** The footer's HTML; none when left out. */
  footer?: string;
}

/** The page's whole document. */
export function documentHtml(d: DocumentParts): string {
  const refresh = d.refreshSeconds !== undefined && d.refreshSeconds > 0 ? `<meta http-equiv="refresh" content="${d.refreshSeconds}">\n` : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${refresh}<title>${escapeHtml(d.title)}</title>
<style>${STYLE}</style>
</head>
<body>
<header><h1><a href="${escapeHtml(d.base)}/">${escapeHtml(d.siteTitle)}</a></h1>${d.header ?? ''}</header>
<main>
${d.body}
</main>
${d.footer ?? ''}
</body>
</html>
`;
}
