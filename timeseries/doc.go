// Package timeseries turns a field's irregular observations of one index
// (cloud-free Sentinel-2 dates, Landsat, radar) into a gap-free daily series
// with an 80 % interval, phenology metrics per season and change events.
//
// The model is a local linear trend observed with noise, in days:
//
//	level[t+1] = level[t] + slope[t] + η,   η ~ N(0, qL)
//	slope[t+1] = slope[t] + ζ,              ζ ~ N(0, qS)
//	y[i]       = level[t_i] + ε_i,          ε_i ~ N(0, R / clear_i / w_i)
//
// where clear_i is the observation's clear fraction and w_i a robustness
// weight (1 for ordinary observations, smaller for outliers such as
// undetected cloud). A Kalman filter and a Rauch–Tung–Striebel smoother give
// each day's smoothed level and its variance, which grows
// between observations (a gap of d days adds about qS·d³/3) and with the
// series' own variability (qS, qL and R are fitted to the data).
//
// Parameters are fitted per series by maximum likelihood: R is concentrated
// out of the likelihood, the ratios qS/R and qL/R are searched on a
// logarithmic grid and refined, and the whole fit is repeated with Huber-type
// weights on the standardised smoothed residuals so that isolated outliers
// do not inflate the noise. Nothing is tuned to a data set.
//
// A day's estimate is the equal-weight combination of the smoothed level and
// the linear interpolation between the observations around it (a forecast
// combination: on the real data it brought every withheld fold at or under
// linear interpolation, the smoother alone not);
// Options.Smooth reports the smoothed level alone, which phenology measures.
//
// The interval of day t is estimate ± z·√(P[t] + R), z the normal quantile
// of the level (1.2816 for 80 %), with R·z² replaced by the empirical
// quantile of the estimate's leave-one-out residuals from 10 observations
// on: it is the interval of a clear observation
// made that day, which is what a withheld image measures, not only of the
// latent level.
//
// See docs/timeseries.md for phenology and event definitions and measured
// accuracy on real data.
package timeseries
