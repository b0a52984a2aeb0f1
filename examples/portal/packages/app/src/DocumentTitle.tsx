import { configApiRef, useApi } from '@backstage/frontend-plugin-api';
import { useEffect } from 'react';
import { useLocation } from 'react-router-dom';

/**
 * What a path shows, for the tab title; undefined leaves the title to the page: entity pages title
 * themselves (entity and tab), so do the Promotions pages (section, plan).
 */
export function titleForPath(pathname: string): string | undefined {
  const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  switch (parts[0]) {
    case undefined:
    case 'catalog':
      return parts.length >= 4 ? undefined : 'Catalog';
    case 'search':
      return 'Search';
    case 'settings':
      return 'Settings';
    case 'catalog-graph':
      return 'Catalog graph';
    case 'promotions':
      return undefined;
    default:
      return 'Page not found';
  }
}

export function DocumentTitle() {
  const { pathname } = useLocation();
  const appTitle = useApi(configApiRef).getOptionalString('app.title') ?? 'Backstage';
  useEffect(() => {
    const t = titleForPath(pathname);
    if (t) document.title = `${t} | ${appTitle}`;
  }, [pathname, appTitle]);
  return null;
}
