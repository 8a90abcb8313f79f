const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
(async () => {
  for (let i = 3; i > 0; i--) {
    console.log(i);
    await sleep(10);
  }
  console.log('done');
})();
