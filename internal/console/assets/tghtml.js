// Telegram HTML (what the bot sends with parse_mode HTML) as DOM nodes for
// a preview, built element by element: only b, i, s, code and pre are
// kept, and a with an http, https or tg href; Telegram's other tags keep
// only their text; any other element (script, img, …) is dropped with its
// content. No attribute is copied but a checked href, and nothing is ever
// assigned to innerHTML, so no markup of a message can run or style the
// console.

const kept = new Set(["b", "i", "s", "code", "pre"]);
// Telegram's other tags: shown as their text.
const textOnly = new Set(["a", "strong", "em", "u", "ins", "strike", "del", "span", "tg-spoiler", "tg-emoji", "blockquote"]);
const linkSchemes = new Set(["http:", "https:", "tg:"]);

// parse reads the HTML in an inert document. Telegram HTML is also well
// formed XML (only &lt; &gt; &amp; &quot; and numeric escapes, quoted
// attributes), and the XML parser keeps every character as Telegram does
// (the HTML parser drops a newline right after <pre>); anything the XML
// parser refuses is read as HTML. (Parsing hostile markup, the browser
// may report an inline style or handler it blocked under the CSP:
// Telegram HTML has neither.)
function parse(html) {
  const parser = new DOMParser();
  const xml = parser.parseFromString(`<m>${html}</m>`, "application/xml");
  if (!xml.getElementsByTagName("parsererror").length) return xml.documentElement;
  return parser.parseFromString(html, "text/html").body;
}

function convert(node, out) {
  for (const n of node.childNodes) {
    if (n.nodeType === Node.TEXT_NODE || n.nodeType === Node.CDATA_SECTION_NODE) {
      out.append(document.createTextNode(n.nodeValue));
      continue;
    }
    if (n.nodeType !== Node.ELEMENT_NODE) continue;
    const tag = n.localName.toLowerCase();
    if (!kept.has(tag) && !textOnly.has(tag)) continue;
    let el = null;
    if (kept.has(tag)) {
      el = document.createElement(tag);
    } else if (tag === "a") {
      const href = safeHref(n.getAttribute("href"));
      if (href) {
        el = document.createElement("a");
        el.href = href;
        el.rel = "noopener noreferrer";
        el.target = "_blank";
      }
    }
    convert(n, el ?? out);
    if (el) out.append(el);
  }
}

function safeHref(raw) {
  if (!raw) return null;
  try {
    const u = new URL(raw);
    return linkSchemes.has(u.protocol) ? u.href : null;
  } catch {
    return null;
  }
}

// telegramFragment returns the message as a DocumentFragment of safe nodes.
export function telegramFragment(html) {
  const out = document.createDocumentFragment();
  convert(parse(html), out);
  return out;
}
