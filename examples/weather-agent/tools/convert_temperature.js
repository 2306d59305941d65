'use strict';

/**
 * Custom tool handler: runs inside the sandbox, one child process per call.
 * It receives the model's arguments (already valid against the input schema)
 * and a context with the declared secrets; its return value is the result the
 * model sees. A thrown error becomes an error result.
 */
exports.handler = async function convertTemperature({ value, to }, context) {
  const celsiusToF = (c) => (c * 9) / 5 + 32;
  const fToCelsius = (f) => ((f - 32) * 5) / 9;
  const converted = to === 'fahrenheit' ? celsiusToF(value) : fToCelsius(value);
  // Declared in troupe.json sandbox.secrets, so it may be passed in; optional here.
  const locale = (context && context.secrets && context.secrets.UNITS_LOCALE) || 'en-US';
  return {
    value: Math.round(converted * 10) / 10,
    unit: to,
    formatted: new Intl.NumberFormat(locale, { maximumFractionDigits: 1 }).format(converted) + (to === 'fahrenheit' ? ' °F' : ' °C'),
  };
};
