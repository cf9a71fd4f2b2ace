// Files: a chosen, dropped or pasted file is uploaded at once (POST /api/files, its bytes as the
// body) and waits as a chip above the composer; a message carries its files as AG-UI media parts
// naming the uploaded ids (a `file` source). A message's files show as thumbnails and download
// links. GET /api/files/{id} needs the bearer header, which an <img> or a link cannot send: the
// bytes are fetched and shown through blob object URLs. Nothing is ever shown as a page: a
// thumbnail is an <img> of an image type, and a link's blob is typed application/octet-stream,
// so even opening it in a tab downloads it.

import * as api from "./api.js";
import { el } from "./render.js";

const IMAGES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const fetched = new Map(); // file id -> Promise of {image, download} object URLs, for the page's life

export function formatSize(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function urlsOf(blob, mediaType) {
  return {
    image: IMAGES.has(mediaType) ? URL.createObjectURL(new Blob([blob], { type: mediaType })) : null,
    download: URL.createObjectURL(new Blob([blob], { type: "application/octet-stream" })),
  };
}

function stored(attachment) {
  if (!fetched.has(attachment.id)) {
    const urls = api.getBlob(`/api/files/${encodeURIComponent(attachment.id)}`).then((blob) => urlsOf(blob, attachment.media_type));
    urls.catch(() => fetched.delete(attachment.id)); // tried again next time
    fetched.set(attachment.id, urls);
  }
  return fetched.get(attachment.id);
}

// AG-UI 1.0 media parts for uploaded files; the part's kind follows the media type.
export function mediaParts(attachments) {
  const kind = (type) => (/^(image|audio|video)\//.test(type) ? type.split("/")[0] : "document");
  return attachments.map((a) => ({
    type: kind(a.media_type),
    source: { type: "file", value: a.id, mimeType: a.media_type },
    metadata: { filename: a.name },
  }));
}

function chip(attachment, extra = []) {
  const title = `${attachment.name} (${attachment.media_type}, ${formatSize(attachment.size)})`;
  return el(
    "span",
    { class: "file", "data-file-id": attachment.id, title },
    IMAGES.has(attachment.media_type) ? el("img", { class: "thumb", alt: attachment.name }) : null,
    el("span", { class: "name" }, attachment.name),
    el("span", { class: "size" }, formatSize(attachment.size)),
    ...extra,
  );
}

// A saved message's files: thumbnails and download links from the gateway's bytes.
export function savedFiles(attachments, showError) {
  if (!attachments || !attachments.length) return null;
  return el("div", { class: "files" }, ...attachments.map((a) => savedChip(a, showError)));
}

function savedChip(attachment, showError) {
  const link = el("a", { class: "download", download: attachment.name, href: "#" }, "download");
  const item = chip(attachment, [link]);
  const show = (urls) => {
    link.href = urls.download;
    link.dataset.ready = "yes";
    const thumb = item.querySelector("img");
    if (thumb && urls.image) thumb.src = urls.image;
  };
  if (IMAGES.has(attachment.media_type)) stored(attachment).then(show, showError);
  link.addEventListener("click", (event) => {
    if (link.dataset.ready) return; // the bytes are here: the browser downloads them
    event.preventDefault();
    stored(attachment).then((urls) => {
      show(urls);
      link.click();
    }, showError);
  });
  return item;
}

// The composer's files: uploaded as they come, shown as chips (a thumbnail for an image, a remove
// button), taken by the next message.
export class PendingFiles {
  // `where()` is {agent, threadId} of the open conversation; `showError(error)` shows a refusal.
  constructor(list, where, showError) {
    this.list = list;
    this.where = where;
    this.showError = showError;
    this.files = []; // {attachment, preview}
    this.uploads = new Set(); // in flight: each settles to true (taken) or false (refused)
  }

  add(files) {
    for (const file of files) {
      const upload = this.#upload(file).finally(() => this.uploads.delete(upload));
      this.uploads.add(upload);
    }
  }

  async #upload(file) {
    const { agent, threadId } = this.where();
    const query = new URLSearchParams({ name: file.name || "pasted", agent, thread: threadId });
    try {
      const attachment = await api.postBytes(`/api/files?${query}`, file);
      const preview = IMAGES.has(attachment.media_type) ? URL.createObjectURL(file) : null;
      this.files.push({ attachment, preview });
      this.#render();
      return true;
    } catch (error) {
      this.showError(error);
      return false;
    }
  }

  // Whether every upload in flight was taken (a refusal is already shown).
  async settled() {
    const results = await Promise.all([...this.uploads]);
    return results.every(Boolean);
  }

  // The pending files, as they are (for the message's live view) and cleared from the composer.
  take() {
    const taken = this.files;
    this.files = [];
    this.#render();
    return taken;
  }

  clear() {
    for (const { preview } of this.files) if (preview) URL.revokeObjectURL(preview);
    this.files = [];
    this.#render();
  }

  #remove(id) {
    const gone = this.files.find((f) => f.attachment.id === id);
    if (gone && gone.preview) URL.revokeObjectURL(gone.preview);
    this.files = this.files.filter((f) => f !== gone);
    this.#render();
  }

  #render() {
    this.list.replaceChildren(...this.files.map((f) => {
      const remove = el("button", { type: "button", class: "remove", title: "Remove", onclick: () => this.#remove(f.attachment.id) }, "×");
      return localChip(f, [remove]);
    }));
    this.list.hidden = this.files.length === 0;
  }
}

// A message's files as it is sent: the browser's own copy when it has one (the thumbnail at once).
export function sentFiles(files, showError) {
  if (!files.length) return null;
  return el("div", { class: "files" }, ...files.map((f) => (f.preview ? localChip(f) : savedChip(f.attachment, showError))));
}

function localChip({ attachment, preview }, extra = []) {
  const item = chip(attachment, extra);
  const thumb = item.querySelector("img");
  if (thumb && preview) thumb.src = preview;
  return item;
}

// Drop files onto `targets`, paste them into `input`: each goes to `pending`.
export function acceptFiles(pending, targets, input) {
  const carriesFiles = (event) => event.dataTransfer && [...event.dataTransfer.types].includes("Files");
  for (const target of targets) {
    target.addEventListener("dragover", (event) => {
      if (!carriesFiles(event)) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = "copy";
    });
    target.addEventListener("drop", (event) => {
      if (!carriesFiles(event)) return;
      event.preventDefault();
      pending.add([...event.dataTransfer.files]);
    });
  }
  input.addEventListener("paste", (event) => {
    const files = [...(event.clipboardData ? event.clipboardData.files : [])];
    if (!files.length) return; // text: pasted as usual
    event.preventDefault();
    pending.add(files);
  });
}
