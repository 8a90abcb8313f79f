class Account {
  constructor(owner, balance = 0) {
    this.owner = owner;
    this.balance = balance;
  }
  deposit(x) { this.balance += x; return this; }
  withdraw(x) {
    if (x > this.balance) throw new Error('insufficient funds');
    this.balance -= x;
    return this;
  }
}
const a = new Account('Zoë').deposit(100).withdraw(30);
console.log(a.owner, a.balance, a.constructor.name);
