/** The console's icon (the brand's diamond), served at /favicon.ico, where browsers look for it whatever a page says. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2457c5"/><path d="M16 5 27 16 16 27 5 16Z" fill="#fff"/><path d="M16 11 21 16 16 21 11 16Z" fill="#2457c5"/></svg>
`;
