import { ThemeBlueprint } from '@backstage/plugin-app-react';
import { createUnifiedTheme, palettes, UnifiedThemeProvider } from '@backstage/theme';

/**
 * Backstage's light theme with secondary text dark enough for WCAG AA on the grey page background
 * (Material UI's default, 54% black, is 4.47:1 on #f5f5f5; AA asks 4.5:1). Replaces the app's
 * `theme:app/light`.
 */
const lightTheme = createUnifiedTheme({
  palette: { ...palettes.light, text: { primary: 'rgba(0, 0, 0, 0.87)', secondary: 'rgba(0, 0, 0, 0.64)' } },
});

function SunIcon() {
  return (
    <svg viewBox="0 0 24 24" width="20" height="20" fill="currentColor" aria-hidden>
      <path d="M12 7a5 5 0 1 0 0 10 5 5 0 0 0 0-10zm0-5 1.5 3h-3L12 2zm0 20-1.5-3h3L12 22zM2 12l3-1.5v3L2 12zm20 0-3 1.5v-3L22 12z" />
    </svg>
  );
}

export const accessibleLightTheme = ThemeBlueprint.make({
  name: 'light',
  params: {
    theme: {
      id: 'light',
      title: 'Light Theme',
      variant: 'light',
      icon: <SunIcon />,
      Provider: ({ children }) => <UnifiedThemeProvider theme={lightTheme}>{children}</UnifiedThemeProvider>,
    },
  },
});
